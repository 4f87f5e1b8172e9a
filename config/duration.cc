#include "config/duration.h"

#include <array>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

namespace egress::config {
namespace {

struct Unit {
  std::string_view suffix;
  int64_t millis;
};

// Longest suffix first, so "ms" is not read as "m" followed by garbage.
constexpr std::array<Unit, 5> kUnits = {{
    {"ms", 1},
    {"s", 1000},
    {"m", 60'000},
    {"h", 3'600'000},
    {"d", 86'400'000},
}};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<Millis> ParseDuration(std::string_view text) {
  if (text.empty()) {
    return Status::InvalidArgument("empty duration (write e.g. \"5s\")");
  }
  if (text.front() == '-') {
    return Status::InvalidArgument("negative duration");
  }
  size_t digits = 0;
  while (digits < text.size() && IsDigit(text[digits])) {
    ++digits;
  }
  if (digits == 0) {
    return Status::InvalidArgument("a duration starts with a whole number (e.g. \"5s\")");
  }
  const std::string_view suffix = text.substr(digits);
  const Unit* unit = nullptr;
  for (const Unit& u : kUnits) {
    if (suffix == u.suffix) {
      unit = &u;
      break;
    }
  }
  if (unit == nullptr) {
    if (suffix.empty()) {
      return Status::InvalidArgument("missing unit (use ms, s, m, h or d)");
    }
    return Status::InvalidArgument(
        fmt::format("unknown unit \"{}\" (use ms, s, m, h or d)", suffix));
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    const int digit = text[i] - '0';
    if (value > (kMax - digit) / 10) {
      return Status::InvalidArgument("duration too large");
    }
    value = value * 10 + digit;
  }
  if (value > kMax / unit->millis) {
    return Status::InvalidArgument("duration too large");
  }
  return Millis(value * unit->millis);
}

std::string FormatDuration(Millis duration) {
  const int64_t ms = duration.count();
  if (ms == 0) {
    return "0s";
  }
  for (auto it = kUnits.rbegin(); it != kUnits.rend(); ++it) {
    if (ms % it->millis == 0) {
      return fmt::format("{}{}", ms / it->millis, it->suffix);
    }
  }
  return fmt::format("{}ms", ms);
}

}  // namespace egress::config
