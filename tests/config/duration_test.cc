#include "config/duration.h"

#include <string>

#include <gtest/gtest.h>

namespace egress::config {
namespace {

struct DurationCase {
  std::string text;
  int64_t millis;  // -1: expect an error
  std::string error;
};

// Verifies every unit, zero, and each rejected form with its message.
TEST(DurationTest, ParsesTable) {
  const DurationCase cases[] = {
      {"0s", 0, ""},
      {"0ms", 0, ""},
      {"250ms", 250, ""},
      {"1s", 1000, ""},
      {"5m", 300'000, ""},
      {"2h", 7'200'000, ""},
      {"7d", 604'800'000, ""},
      {"007s", 7000, ""},
      {"9223372036854775807ms", INT64_MAX, ""},
      {"", -1, "empty duration (write e.g. \"5s\")"},
      {"-5s", -1, "negative duration"},
      {"-0s", -1, "negative duration"},
      {"s", -1, "a duration starts with a whole number (e.g. \"5s\")"},
      {"+5s", -1, "a duration starts with a whole number (e.g. \"5s\")"},
      {" 5s", -1, "a duration starts with a whole number (e.g. \"5s\")"},
      {"5", -1, "missing unit (use ms, s, m, h or d)"},
      {"5w", -1, "unknown unit \"w\" (use ms, s, m, h or d)"},
      {"5 s", -1, "unknown unit \" s\" (use ms, s, m, h or d)"},
      {"5S", -1, "unknown unit \"S\" (use ms, s, m, h or d)"},
      {"1.5s", -1, "unknown unit \".5s\" (use ms, s, m, h or d)"},
      {"5s5m", -1, "unknown unit \"s5m\" (use ms, s, m, h or d)"},
      {"5min", -1, "unknown unit \"min\" (use ms, s, m, h or d)"},
      {"9223372036854775808ms", -1, "duration too large"},
      {"99999999999999999999s", -1, "duration too large"},
      {"9223372036854776s", -1, "duration too large"},
      {"2562047788016h", -1, "duration too large"},
  };
  for (const DurationCase& c : cases) {
    SCOPED_TRACE("\"" + c.text + "\"");
    Result<Millis> parsed = ParseDuration(c.text);
    if (c.millis >= 0) {
      ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
      EXPECT_EQ(parsed->count(), c.millis);
    } else {
      ASSERT_FALSE(parsed.has_value());
      EXPECT_EQ(parsed.error().code(), Status::Code::kInvalidArgument);
      EXPECT_EQ(parsed.error().message(), c.error);
    }
  }
}

// Verifies the largest hour count that fits still parses.
TEST(DurationTest, AcceptsLargestHours) {
  Result<Millis> parsed = ParseDuration("2562047788015h");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->count(), 2562047788015LL * 3'600'000);
}

// Verifies FormatDuration picks the largest exact unit and round-trips.
TEST(DurationTest, FormatsAndRoundTrips) {
  EXPECT_EQ(FormatDuration(Millis(0)), "0s");
  EXPECT_EQ(FormatDuration(Millis(250)), "250ms");
  EXPECT_EQ(FormatDuration(Millis(1500)), "1500ms");
  EXPECT_EQ(FormatDuration(Millis(5000)), "5s");
  EXPECT_EQ(FormatDuration(Millis(90'000)), "90s");
  EXPECT_EQ(FormatDuration(Millis(1'800'000)), "30m");
  EXPECT_EQ(FormatDuration(Millis(36'000'000)), "10h");
  EXPECT_EQ(FormatDuration(Millis(604'800'000)), "7d");
  for (int64_t ms : {0LL, 1LL, 999LL, 60'000LL, 3'600'001LL, 86'400'000LL}) {
    Result<Millis> back = ParseDuration(FormatDuration(Millis(ms)));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->count(), ms);
  }
}

}  // namespace
}  // namespace egress::config
