#include "dispatcher/base/time_text.h"

#include <cstdint>
#include <cstdlib>
#include <ctime>

#include <gtest/gtest.h>

namespace egress {
namespace {

constexpr int64_t kDec1At10 = 1'796'119'200'000;  // 2026-12-01T10:00:00Z

// Verifies RFC 3339 in UTC, with offsets and with fractions.
TEST(TimeTextTest, ParsesRfc3339) {
  EXPECT_EQ(*ParseRfc3339Millis("2026-12-01T10:00:00Z"), kDec1At10);
  EXPECT_EQ(*ParseRfc3339Millis("2026-12-01t10:00:00z"), kDec1At10);
  EXPECT_EQ(*ParseRfc3339Millis("2026-12-01T11:30:00+01:30"), kDec1At10);
  EXPECT_EQ(*ParseRfc3339Millis("2026-12-01T05:00:00-05:00"), kDec1At10);
  EXPECT_EQ(*ParseRfc3339Millis("2026-12-01T10:00:00.25Z"), kDec1At10 + 250);
  EXPECT_EQ(*ParseRfc3339Millis("2026-12-01T10:00:00.123999Z"), kDec1At10 + 123);
  EXPECT_EQ(*ParseRfc3339Millis("1970-01-01T00:00:00Z"), 0);
}

// Verifies that malformed or impossible times are InvalidArgument naming the problem.
TEST(TimeTextTest, RejectsBadTimes) {
  for (const char* bad : {"", "2026-12-01", "2026-12-01T10:00:00", "2026-02-30T10:00:00Z",
                          "2026-12-01T24:00:00Z", "2026-12-01T10:00:00.Z",
                          "2026-12-01T10:00:00+0100", "2026-12-01T10:00:00Zjunk", "yesterday"}) {
    auto r = ParseRfc3339Millis(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(r.error().message().find("RFC 3339"), std::string::npos) << r.error().message();
  }
}

// Verifies that the API form takes Unix ms or RFC 3339.
TEST(TimeTextTest, ParsesUnixMillisOrRfc3339) {
  EXPECT_EQ(*ParseTimeMillis("1796119200000"), kDec1At10);
  EXPECT_EQ(*ParseTimeMillis("2026-12-01T10:00:00Z"), kDec1At10);
  EXPECT_FALSE(ParseTimeMillis("-5"));
  EXPECT_FALSE(ParseTimeMillis("99999999999999999999999"));
  EXPECT_FALSE(ParseTimeMillis("10m"));
}

// Verifies FormatRfc3339Seconds: UTC whatever the host's zone, a started second rounded up, and
// the ends clamped (a time far out of range, as a hostile store could make, is not an error).
TEST(TimeTextTest, FormatsRfc3339Seconds) {
  setenv("TZ", "America/New_York", 1);
  tzset();
  EXPECT_EQ(FormatRfc3339Seconds(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Seconds(1), "1970-01-01T00:00:01Z");
  EXPECT_EQ(FormatRfc3339Seconds(kDec1At10), "2026-12-01T10:00:00Z");
  EXPECT_EQ(FormatRfc3339Seconds(kDec1At10 + 250), "2026-12-01T10:00:01Z");
  EXPECT_EQ(FormatRfc3339Seconds(-1'000), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatRfc3339Seconds(INT64_MAX), "9999-12-31T23:59:59Z");
  EXPECT_EQ(FormatRfc3339Seconds(INT64_MIN), "0001-01-01T00:00:00Z");
  EXPECT_EQ(*ParseRfc3339Millis(FormatRfc3339Seconds(kDec1At10)), kDec1At10);
  unsetenv("TZ");
  tzset();
}

}  // namespace
}  // namespace egress
