#include "dispatcher/cli/time_flag.h"

#include <charconv>
#include <limits>
#include <string>

#include "dispatcher/base/time_text.h"

namespace egress::cli {
namespace {

// Milliseconds per unit of an age, 0 for an unknown unit.
int64_t UnitMs(char unit) {
  switch (unit) {
    case 's':
      return 1000;
    case 'm':
      return 60'000;
    case 'h':
      return 3'600'000;
    case 'd':
      return 86'400'000;
    default:
      return 0;
  }
}

}  // namespace

Result<int64_t> ParseTimeFlag(std::string_view text, int64_t now_ms) {
  const Status bad = Status::InvalidArgument(
      "'" + std::string(text) +
      "' is not a time: use RFC 3339 (2026-12-01T10:00:00Z), Unix ms, or an age (10m, 2h, 1d)");
  if (text.size() >= 2 && UnitMs(text.back()) != 0) {
    const std::string_view digits = text.substr(0, text.size() - 1);
    int64_t n = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    const int64_t unit = UnitMs(text.back());
    if (ec != std::errc() || p != digits.data() + digits.size() || n < 0 ||
        n > std::numeric_limits<int64_t>::max() / unit / 2) {
      return bad;
    }
    return now_ms - n * unit;
  }
  auto ms = ParseTimeMillis(text);
  if (!ms) {
    // Something shaped like a date gets the RFC 3339 parser's own words on what is wrong.
    const bool date_like =
        text.size() > 10 && text[4] == '-' &&
        text.substr(0, 4).find_first_not_of("0123456789") == std::string_view::npos;
    return date_like ? Status::InvalidArgument(ms.error().message()) : bad;
  }
  return ms;
}

}  // namespace egress::cli
