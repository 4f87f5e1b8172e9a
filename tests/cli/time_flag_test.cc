#include "dispatcher/cli/time_flag.h"

#include <gtest/gtest.h>

namespace egress::cli {
namespace {

constexpr int64_t kNow = 1'796'119'200'000;  // 2026-12-01T10:00:00Z

// Verifies the three forms: RFC 3339, Unix ms and an age before now.
TEST(TimeFlagTest, AcceptsRfc3339UnixMillisAndAges) {
  EXPECT_EQ(*ParseTimeFlag("2026-12-01T10:00:00Z", 0), kNow);
  EXPECT_EQ(*ParseTimeFlag("2026-12-01T09:00:00-01:00", 0), kNow);
  EXPECT_EQ(*ParseTimeFlag("1796119200000", 0), kNow);
  EXPECT_EQ(*ParseTimeFlag("30s", kNow), kNow - 30'000);
  EXPECT_EQ(*ParseTimeFlag("10m", kNow), kNow - 600'000);
  EXPECT_EQ(*ParseTimeFlag("2h", kNow), kNow - 7'200'000);
  EXPECT_EQ(*ParseTimeFlag("1d", kNow), kNow - 86'400'000);
  EXPECT_EQ(*ParseTimeFlag("0m", kNow), kNow);
}

// Verifies that anything else is InvalidArgument naming the forms or the RFC 3339 problem.
TEST(TimeFlagTest, RejectsOtherText) {
  for (const char* bad : {"", "m", "-5m", "10 m", "10w", "yesterday", "1.5h", "2026-12-01",
                          "99999999999999999999d"}) {
    auto r = ParseTimeFlag(bad, kNow);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(r.error().message().find("is not"), std::string::npos) << r.error().message();
  }
  EXPECT_NE(ParseTimeFlag("2026-13-01T00:00:00Z", kNow).error().message().find("RFC 3339"),
            std::string::npos);
}

}  // namespace
}  // namespace egress::cli
