#include "adapters/http_date.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// 2026-01-01T00:00:00Z, FakeClock's wall origin.
const WallTime kReference = FromUnixMillis(1'767'225'600'000);
constexpr int64_t k1994 = 784'111'777;  // Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example).

std::optional<int64_t> UnixSeconds(const std::string& text) {
  std::optional<WallTime> t = ParseHttpDate(text, kReference);
  if (!t.has_value()) {
    return std::nullopt;
  }
  return std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count();
}

// Verifies the three RFC 9110 forms and the lenient variants we accept.
TEST(HttpDateTest, ParsesAllThreeForms) {
  struct Case {
    std::string text;
    std::optional<int64_t> want;
  };
  const Case cases[] = {
      {"Sun, 06 Nov 1994 08:49:37 GMT", k1994},
      {"Sunday, 06-Nov-94 08:49:37 GMT", k1994},
      {"Sun Nov  6 08:49:37 1994", k1994},
      {"sun, 06 nov 1994 08:49:37 gmt", k1994},
      {"06 Nov 1994 08:49:37 GMT", k1994},
      {"Sun, 06 Nov 1994 08:49:37", k1994},
      {"Sun, 06 Nov 1994 08:49:37 UTC", k1994},
      {"Sun, 06 Nov 1994 08:49:37 +0000", k1994},
      {"  Sun, 06 Nov 1994 08:49:37 GMT  ", k1994},
      {"Mon, 06 Nov 1994 08:49:37 GMT", k1994},  // A wrong weekday is not checked.
      {"Thu, 01 Jan 2026 00:01:30 GMT", 1'767'225'690},
      {"Sat, 31 Dec 2016 23:59:60 GMT", 1'483'228'800},  // Leap second.
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(UnixSeconds(c.text), c.want);
  }
}

// Verifies that malformed dates are refused rather than guessed.
TEST(HttpDateTest, RefusesGarbage) {
  const char* bad[] = {
      "",
      "Sun",
      "Sun, 06 Nov 1994 08:49:37 PST",
      "Sun, 06 Nov 1994 08:49:37 +0100",
      "Sun, 06 Nov 1994 08:49:37 GMT extra",
      "Sun, 32 Nov 1994 08:49:37 GMT",
      "Sun, 31 Nov 1994 08:49:37 GMT",
      "Sun, 29 Feb 1995 08:49:37 GMT",
      "Sun, 06 Foo 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 24:00:00 GMT",
      "Sun, 06 Nov 1994 08:60:00 GMT",
      "Sun, 06 Nov 1994 8:49:37 GMT",
      "Sun, 06 Nov 994 08:49:37 GMT",
      "Sun, 06 Nov 3000 08:49:37 GMT",
      "Sun, 06 Nov 1800 08:49:37 GMT",
      "Sun, -6 Nov 1994 08:49:37 GMT",
      "Funday, 06 Nov 1994 08:49:37 GMT",
      "1994-11-06T08:49:37Z",
      "120",
  };
  for (const char* text : bad) {
    SCOPED_TRACE(text);
    EXPECT_EQ(ParseHttpDate(text, kReference), std::nullopt);
  }
}

// Verifies RFC 9110's two-digit-year rule relative to the injected reference (2026).
TEST(HttpDateTest, ResolvesTwoDigitYears) {
  struct Case {
    std::string yy;
    int year;
  };
  const Case cases[] = {{"94", 1994}, {"26", 2026}, {"76", 2076}, {"77", 1977}, {"00", 2000}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yy);
    std::optional<WallTime> t =
        ParseHttpDate("Monday, 01-Mar-" + c.yy + " 00:00:00 GMT", kReference);
    ASSERT_TRUE(t.has_value());
    std::chrono::year_month_day ymd(std::chrono::floor<std::chrono::days>(*t));
    EXPECT_EQ(static_cast<int>(ymd.year()), c.year);
  }
}

}  // namespace
}  // namespace egress::adapters
