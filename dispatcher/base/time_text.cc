#include "dispatcher/base/time_text.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <string>

namespace egress {
namespace {

// Reads exactly `n` digits at `pos`; false when they are not there.
bool Digits(std::string_view t, size_t pos, size_t n, int& out) {
  if (pos + n > t.size()) {
    return false;
  }
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (t[i] < '0' || t[i] > '9') {
      return false;
    }
    out = out * 10 + (t[i] - '0');
  }
  return true;
}

bool Is(std::string_view t, size_t pos, char a, char b = '\0') {
  return pos < t.size() && (t[pos] == a || (b != '\0' && t[pos] == b));
}

Status Bad(std::string_view text, const char* why) {
  return Status::InvalidArgument("'" + std::string(text) + "' is not an RFC 3339 time (" + why +
                                 "; e.g. 2026-12-01T10:00:00Z)");
}

}  // namespace

Result<int64_t> ParseRfc3339Millis(std::string_view t) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!Digits(t, 0, 4, y) || !Is(t, 4, '-') || !Digits(t, 5, 2, mo) || !Is(t, 7, '-') ||
      !Digits(t, 8, 2, d)) {
    return Bad(t, "date must be YYYY-MM-DD");
  }
  if (!Is(t, 10, 'T', 't') || !Digits(t, 11, 2, h) || !Is(t, 13, ':') || !Digits(t, 14, 2, mi) ||
      !Is(t, 16, ':') || !Digits(t, 17, 2, s)) {
    return Bad(t, "time must be THH:MM:SS");
  }
  using namespace std::chrono;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                           day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) {
    return Bad(t, "no such date or time");
  }
  size_t pos = 19;
  int64_t frac_ms = 0;
  if (Is(t, pos, '.')) {
    size_t n = 0;
    for (++pos; pos < t.size() && t[pos] >= '0' && t[pos] <= '9'; ++pos, ++n) {
      if (n < 3) {
        frac_ms = frac_ms * 10 + (t[pos] - '0');
      }
    }
    if (n == 0) {
      return Bad(t, "no digits after '.'");
    }
    for (; n < 3; ++n) {
      frac_ms *= 10;
    }
  }
  int64_t offset_min = 0;
  if (Is(t, pos, 'Z', 'z') && pos + 1 == t.size()) {
    // UTC
  } else if (Is(t, pos, '+', '-') && pos + 6 == t.size()) {
    int oh = 0, om = 0;
    if (!Digits(t, pos + 1, 2, oh) || !Is(t, pos + 3, ':') || !Digits(t, pos + 4, 2, om) ||
        oh > 23 || om > 59) {
      return Bad(t, "offset must be Z or +HH:MM");
    }
    offset_min = (t[pos] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return Bad(t, "needs an offset, Z or +HH:MM");
  }
  const int64_t days = sys_days(ymd).time_since_epoch().count();
  const int64_t secs = days * 86400 + h * 3600 + mi * 60 + std::min(s, 59) - offset_min * 60;
  return secs * 1000 + frac_ms;
}

Result<int64_t> ParseTimeMillis(std::string_view t) {
  if (!t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos) {
    int64_t ms = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), ms);
    if (ec != std::errc() || p != t.data() + t.size()) {
      return Status::InvalidArgument("'" + std::string(t) + "' is too large for Unix ms");
    }
    return ms;
  }
  return ParseRfc3339Millis(t);
}

std::string FormatRfc3339Seconds(int64_t unix_ms) {
  using namespace std::chrono;
  // 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z in Unix seconds.
  constexpr int64_t kMin = -62'135'596'800;
  constexpr int64_t kMax = 253'402'300'799;
  int64_t s = unix_ms / 1000 + (unix_ms % 1000 > 0 ? 1 : 0);
  s = std::clamp(s, kMin, kMax);
  int64_t day = s / 86'400;
  int64_t rem = s % 86'400;
  if (rem < 0) {
    rem += 86'400;
    --day;
  }
  const year_month_day ymd{sys_days{days{day}}};
  char out[32];
  const int n = std::snprintf(out, sizeof(out), "%04d-%02u-%02uT%02d:%02d:%02dZ",
                              static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                              static_cast<unsigned>(ymd.day()), static_cast<int>(rem / 3600),
                              static_cast<int>(rem / 60 % 60), static_cast<int>(rem % 60));
  return std::string(out, static_cast<size_t>(n));
}

}  // namespace egress
