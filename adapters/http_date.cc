#include "adapters/http_date.h"

#include <array>
#include <charconv>
#include <chrono>
#include <string_view>
#include <vector>

#include "adapters/http_header.h"

namespace egress::adapters {
namespace {

namespace chr = std::chrono;

constexpr std::array<std::string_view, 12> kMonths = {"jan", "feb", "mar", "apr", "may", "jun",
                                                      "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> kShortDays = {"mon", "tue", "wed", "thu",
                                                        "fri", "sat", "sun"};
constexpr std::array<std::string_view, 7> kLongDays = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"};
constexpr size_t kMaxTokens = 8;
// Keeps the result inside WallTime's nanosecond range (years 1677 to 2262).
constexpr int kMinYear = 1900;
constexpr int kMaxYear = 2200;

// Splits at spaces, tabs and commas, and splits "06-Nov-94" at its dashes. At most kMaxTokens.
std::vector<std::string_view> Tokenize(std::string_view text) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < text.size() && tokens.size() <= kMaxTokens) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == ',' ||
        (c == '-' && !tokens.empty() && i > 0 && text[i - 1] != ' ' && text[i - 1] != ',')) {
      ++i;
      continue;
    }
    size_t start = i++;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != ',' &&
           text[i] != '-') {
      ++i;
    }
    tokens.push_back(text.substr(start, i - start));
  }
  return tokens;
}

template <size_t N>
bool IsOneOf(std::string_view token, const std::array<std::string_view, N>& names) {
  for (std::string_view name : names) {
    if (EqualsIgnoreCase(token, name)) {
      return true;
    }
  }
  return false;
}

std::optional<unsigned> MonthOf(std::string_view token) {
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (EqualsIgnoreCase(token, kMonths[i])) {
      return static_cast<unsigned>(i + 1);
    }
  }
  return std::nullopt;
}

// 1 to `max_digits` decimal digits, nothing else.
std::optional<int> Digits(std::string_view token, size_t max_digits) {
  int value = 0;
  if (token.empty() || token.size() > max_digits) {
    return std::nullopt;
  }
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size() || token.front() == '-' ||
      token.front() == '+') {
    return std::nullopt;
  }
  return value;
}

// "08:49:37" as seconds since midnight (a leap second 60 is accepted).
std::optional<int> TimeOfDay(std::string_view token) {
  if (token.size() != 8 || token[2] != ':' || token[5] != ':') {
    return std::nullopt;
  }
  std::optional<int> h = Digits(token.substr(0, 2), 2);
  std::optional<int> m = Digits(token.substr(3, 2), 2);
  std::optional<int> s = Digits(token.substr(6, 2), 2);
  if (!h || !m || !s || *h > 23 || *m > 59 || *s > 60) {
    return std::nullopt;
  }
  return *h * 3600 + *m * 60 + *s;
}

bool IsUtcZone(std::string_view token) {
  return EqualsIgnoreCase(token, "GMT") || EqualsIgnoreCase(token, "UTC") ||
         EqualsIgnoreCase(token, "UT") || token == "+0000" || token == "-0000";
}

std::optional<int> FullYear(std::string_view token, WallTime reference) {
  if (token.size() == 4) {
    return Digits(token, 4);
  }
  std::optional<int> yy = Digits(token, 2);
  if (token.size() != 2 || !yy) {
    return std::nullopt;
  }
  int ref_year = static_cast<int>(chr::year_month_day(chr::floor<chr::days>(reference)).year());
  int year = ref_year / 100 * 100 + *yy;
  return year > ref_year + 50 ? year - 100 : year;
}

struct DateParts {
  std::string_view day, month, year, time, zone;
};

// Orders the tokens after the weekday: asctime puts the month first and the year last.
std::optional<DateParts> Arrange(const std::vector<std::string_view>& t, size_t first) {
  size_t n = t.size() - first;
  if (n < 4 || n > 5) {
    return std::nullopt;
  }
  std::string_view zone = n == 5 ? t[first + 4] : "GMT";
  if (MonthOf(t[first]).has_value()) {
    return DateParts{t[first + 1], t[first], t[first + 3], t[first + 2], zone};
  }
  return DateParts{t[first], t[first + 1], t[first + 2], t[first + 3], zone};
}

}  // namespace

std::optional<WallTime> ParseHttpDate(std::string_view text, WallTime reference) {
  std::vector<std::string_view> tokens = Tokenize(TrimOws(text));
  if (tokens.empty() || tokens.size() > kMaxTokens) {
    return std::nullopt;
  }
  size_t first = 0;
  if (IsOneOf(tokens[0], kShortDays) || IsOneOf(tokens[0], kLongDays)) {
    first = 1;
  }
  std::optional<DateParts> parts = Arrange(tokens, first);
  if (!parts || !IsUtcZone(parts->zone)) {
    return std::nullopt;
  }
  std::optional<int> day = Digits(parts->day, 2);
  std::optional<unsigned> month = MonthOf(parts->month);
  std::optional<int> year = FullYear(parts->year, reference);
  std::optional<int> seconds = TimeOfDay(parts->time);
  if (!day || !month || !year || !seconds || *year < kMinYear || *year > kMaxYear) {
    return std::nullopt;
  }
  chr::year_month_day ymd{chr::year(*year), chr::month(*month),
                          chr::day(static_cast<unsigned>(*day))};
  if (!ymd.ok()) {
    return std::nullopt;
  }
  return WallTime(chr::sys_days(ymd).time_since_epoch() + chr::seconds(*seconds));
}

}  // namespace egress::adapters
