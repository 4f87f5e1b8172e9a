#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "adapters/rate_limit_headers.h"

namespace egress::adapters {
namespace {

using std::chrono::seconds;

const WallTime kReceived = FromUnixMillis(1'767'225'600'000);

RateLimitHeaders Parse(const HttpHeaders& headers, int status = 429) {
  return ParseRateLimitHeaders(headers, status, kReceived);
}

// Verifies the current structured-field drafts: RateLimit with RateLimit-Policy.
TEST(RateLimitHeadersIetfTest, ParsesCurrentDraft) {
  RateLimitHeaders h = Parse(
      {{"RateLimit", R"("default";r=50;t=30)"}, {"RateLimit-Policy", R"("default";q=100;w=60)"}},
      200);
  EXPECT_EQ(h.remaining, 50);
  EXPECT_EQ(h.reset_after, seconds(30));
  EXPECT_EQ(h.limit, 100);
  EXPECT_EQ(h.policy_name, "default");
  EXPECT_EQ(h.policy_quota, 100);
  EXPECT_EQ(h.policy_window, seconds(60));
  EXPECT_EQ(h.SuggestedWait(), std::nullopt);
}

// Verifies that with several policies the one with fewest remaining requests is in force,
// whether the members share a line or come on repeated lines.
TEST(RateLimitHeadersIetfTest, ChoosesMostRestrictivePolicy) {
  const HttpHeaders one_line = {
      {"ratelimit-policy", R"("minute";q=120;w=60, "day";q=5000;w=86400)"},
      {"ratelimit", R"("day";r=3000;t=40000, "minute";r=17;t=42)"}};
  const HttpHeaders repeated = {{"RateLimit-Policy", R"("minute";q=120;w=60)"},
                                {"RateLimit-Policy", R"("day";q=5000;w=86400)"},
                                {"RateLimit", R"("day";r=3000;t=40000)"},
                                {"RateLimit", R"("minute";r=17;t=42)"}};
  for (const HttpHeaders& headers : {one_line, repeated}) {
    RateLimitHeaders h = Parse(headers, 200);
    EXPECT_EQ(h.remaining, 17);
    EXPECT_EQ(h.reset_after, seconds(42));
    EXPECT_EQ(h.policy_name, "minute");
    EXPECT_EQ(h.policy_quota, 120);
    EXPECT_EQ(h.policy_window, seconds(60));
  }
}

// Verifies that Retry-After wins over a disagreeing RateLimit (platforms.md edge case 18).
TEST(RateLimitHeadersIetfTest, RetryAfterWins) {
  RateLimitHeaders h = Parse({{"RateLimit", R"("default";r=0;t=20)"}, {"Retry-After", "5"}});
  EXPECT_EQ(h.remaining, 0);
  EXPECT_EQ(h.reset_after, seconds(20));
  EXPECT_EQ(h.retry_after, seconds(5));
  EXPECT_EQ(h.SuggestedWait(), seconds(5));
  // Without Retry-After the exhausted policy's t is the wait.
  EXPECT_EQ(Parse({{"RateLimit", R"("default";r=0;t=20)"}}).SuggestedWait(), seconds(20));
}

// Verifies the older forms: draft-08 token names, draft-07 dictionary, draft-06 fields.
TEST(RateLimitHeadersIetfTest, ParsesOlderDrafts) {
  RateLimitHeaders d08 =
      Parse({{"RateLimit", "default;r=5;t=10"}, {"RateLimit-Policy", "default;q=10;w=60"}});
  EXPECT_EQ(d08.remaining, 5);
  EXPECT_EQ(d08.policy_name, "default");
  EXPECT_EQ(d08.limit, 10);

  RateLimitHeaders d07 =
      Parse({{"RateLimit", "limit=100, remaining=50, reset=30"}, {"RateLimit-Policy", "100;w=60"}});
  EXPECT_EQ(d07.limit, 100);
  EXPECT_EQ(d07.remaining, 50);
  EXPECT_EQ(d07.reset_after, seconds(30));
  EXPECT_EQ(d07.policy_quota, 100);
  EXPECT_EQ(d07.policy_window, seconds(60));

  RateLimitHeaders d06 = Parse({{"RateLimit-Limit", "100, 100;w=60"},
                                {"RateLimit-Remaining", "42"},
                                {"RateLimit-Reset", "17"}});
  EXPECT_EQ(d06.limit, 100);
  EXPECT_EQ(d06.remaining, 42);
  EXPECT_EQ(d06.reset_after, seconds(17));
}

// Verifies that policies counting bytes or concurrency do not set the request budget.
TEST(RateLimitHeadersIetfTest, SkipsNonRequestQuotaUnits) {
  RateLimitHeaders h =
      Parse({{"RateLimit-Policy", R"("bytes";q=1000;qu="content-bytes";w=60, "req";q=10;w=1)"},
             {"RateLimit", R"("bytes";r=0;t=50, "req";r=3;t=1)"}});
  EXPECT_EQ(h.remaining, 3);
  EXPECT_EQ(h.reset_after, seconds(1));
  EXPECT_EQ(h.policy_name, "req");
  EXPECT_EQ(h.policy_quota, 10);
}

// Verifies that malformed RateLimit fields are ignored, not guessed at.
TEST(RateLimitHeadersIetfTest, IgnoresMalformedFields) {
  const char* bad[] = {
      R"("default";r=abc;t=30)",
      R"("default";r=-1)",
      R"("open;r=5)",
      "(a b);r=1",
      ";;;,,,",
      R"("default";t=30)",
      "",
      "r=5",
      "remaining=lots",
  };
  for (const char* value : bad) {
    SCOPED_TRACE(value);
    RateLimitHeaders h = Parse({{"RateLimit", value}});
    EXPECT_EQ(h.remaining, std::nullopt);
    EXPECT_EQ(h.SuggestedWait(), std::nullopt);
  }
  RateLimitHeaders h = Parse({{"RateLimit-Policy", R"("p";q=x;w=-5)"}});
  EXPECT_EQ(h.policy_name, "p");
  EXPECT_EQ(h.policy_quota, std::nullopt);
  EXPECT_EQ(h.policy_window, std::nullopt);
}

// Verifies per-field precedence: X-RateLimit-* first, then RateLimit, then RateLimit-*.
TEST(RateLimitHeadersIetfTest, PrefersXRateLimitThenCurrentDraft) {
  RateLimitHeaders h = Parse({{"RateLimit-Remaining", "1"},
                              {"RateLimit", R"("p";r=3;t=9)"},
                              {"RateLimit-Policy", R"("p";q=10;w=60)"},
                              {"X-RateLimit-Remaining", "7"}});
  EXPECT_EQ(h.remaining, 7);
  EXPECT_EQ(h.limit, 10);
  EXPECT_EQ(h.reset_after, seconds(9));
}

}  // namespace
}  // namespace egress::adapters
