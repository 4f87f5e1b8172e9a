#include "adapters/rate_limit_headers.h"

#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using Scope = RateLimitHeaders::Scope;

// 2026-01-01T00:00:00Z (a Thursday), FakeClock's wall origin.
constexpr int64_t kReceivedS = 1'767'225'600;
const WallTime kReceived = FromUnixMillis(kReceivedS * 1000);

RateLimitHeaders Parse(const HttpHeaders& headers, int status = 429) {
  return ParseRateLimitHeaders(headers, status, kReceived);
}

std::optional<int64_t> RetryAfterMs(const std::string& value) {
  std::optional<Millis> d = Parse({{"Retry-After", value}}).retry_after;
  return d.has_value() ? std::optional<int64_t>(d->count()) : std::nullopt;
}

// Verifies the IMF-fixdate form of Retry-After, measured from the injected receipt time.
TEST(RateLimitHeadersTest, ParsesImfFixdate) {
  EXPECT_EQ(RetryAfterMs("Thu, 01 Jan 2026 00:01:30 GMT"), 90'000);
}

// Verifies every Retry-After form: delay-seconds, floats, clamping, dates and garbage.
TEST(RateLimitHeadersTest, ParsesRetryAfterTable) {
  constexpr int64_t kCap = 24 * 3600 * 1000;
  struct Case {
    std::string value;
    std::optional<int64_t> want_ms;
  };
  const Case cases[] = {
      {"120", 120'000},
      {"0", 0},
      {"1.5", 1'500},
      {"  30 ", 30'000},
      {"+2", 2'000},
      {"1e3", 1'000'000},
      {"-5", 0},
      {"1000000", kCap},
      {"65000", 65'000'000},  // A legacy millisecond value reads as seconds (under the cap).
      {"99999999999999999999", kCap},
      {"Wed, 31 Dec 2025 23:59:00 GMT", 0},           // In the past.
      {"Thursday, 01-Jan-26 00:02:00 GMT", 120'000},  // RFC 850.
      {"Thu Jan  1 00:00:45 2026", 45'000},           // asctime.
      {"Fri, 01 Jan 2027 00:00:00 GMT", kCap},
      {"5, 10", 10'000},  // Repeated field joined by a proxy: the longest wins.
      {"", std::nullopt},
      {"soon", std::nullopt},
      {"0x10", std::nullopt},
      {"inf", std::nullopt},
      {"nan", std::nullopt},
      {"1.5s", std::nullopt},
      {"Thu, 01 Jan 2026 00:01:30 +0100", std::nullopt},
      {"Thu, 32 Jan 2026 00:00:00 GMT", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    EXPECT_EQ(RetryAfterMs(c.value), c.want_ms);
  }
}

// Verifies a Discord bucket 429 (platforms.md edge case 5): every header lands in its field.
TEST(RateLimitHeadersTest, ParsesDiscordBucket429) {
  RateLimitHeaders h = Parse({{"X-RateLimit-Limit", "5"},
                              {"X-RateLimit-Remaining", "0"},
                              {"X-RateLimit-Reset", "1767225664.570"},
                              {"X-RateLimit-Reset-After", "64.57"},
                              {"X-RateLimit-Bucket", "abcd1234"},
                              {"X-RateLimit-Scope", "user"},
                              {"Retry-After", "65"},
                              {"Content-Type", "application/json"}});
  EXPECT_EQ(h.http_status, 429);
  EXPECT_EQ(h.limit, 5);
  EXPECT_EQ(h.remaining, 0);
  EXPECT_EQ(h.reset_at, kReceived + Millis(64'570));
  EXPECT_EQ(h.reset_after, Millis(64'570));
  EXPECT_EQ(h.retry_after, seconds(65));
  EXPECT_EQ(h.bucket, "abcd1234");
  EXPECT_EQ(h.scope, Scope::kUser);
  EXPECT_FALSE(h.global);
  EXPECT_EQ(h.SuggestedWait(), seconds(65));
}

// Verifies Discord's global and shared 429s (edge cases 6 and 7).
TEST(RateLimitHeadersTest, ParsesDiscordGlobalAndShared) {
  RateLimitHeaders global = Parse(
      {{"x-ratelimit-global", "true"}, {"x-ratelimit-scope", "global"}, {"retry-after", "2"}});
  EXPECT_TRUE(global.global);
  EXPECT_EQ(global.scope, Scope::kGlobal);
  EXPECT_EQ(global.bucket, std::nullopt);
  EXPECT_EQ(global.SuggestedWait(), seconds(2));

  RateLimitHeaders shared = Parse(
      {{"X-RateLimit-Scope", "Shared"}, {"X-RateLimit-Remaining", "9"}, {"Retry-After", "3600"}});
  EXPECT_EQ(shared.scope, Scope::kShared);
  EXPECT_EQ(shared.remaining, 9);
  EXPECT_EQ(shared.SuggestedWait(), hours(1));
}

// Verifies a pre-emptive wait on a 200 with Remaining 0 (edge case 8).
TEST(RateLimitHeadersTest, WaitsOnSuccessWithNothingRemaining) {
  RateLimitHeaders h =
      Parse({{"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset-After", "0.8"}}, 200);
  EXPECT_EQ(h.SuggestedWait(), Millis(800));
}

// Verifies GitHub's lowercase x-ratelimit-* with an epoch reset and the resource as bucket.
TEST(RateLimitHeadersTest, ParsesGitHubHeaders) {
  RateLimitHeaders h = Parse({{"x-ratelimit-limit", "5000"},
                              {"x-ratelimit-remaining", "0"},
                              {"x-ratelimit-used", "5000"},
                              {"x-ratelimit-reset", std::to_string(kReceivedS + 3600)},
                              {"x-ratelimit-resource", "core"}},
                             403);
  EXPECT_EQ(h.limit, 5000);
  EXPECT_EQ(h.remaining, 0);
  EXPECT_EQ(h.reset_at, kReceived + hours(1));
  EXPECT_EQ(h.reset_after, std::nullopt);
  EXPECT_EQ(h.bucket, "core");
  EXPECT_EQ(h.SuggestedWait(), hours(1));
}

// Verifies the magnitude rule telling epoch resets from delays.
TEST(RateLimitHeadersTest, TellsEpochFromDelta) {
  struct Case {
    std::string value;
    std::optional<Millis> reset_after;
    std::optional<Millis> reset_at_offset;
  };
  const Case cases[] = {
      {"30", seconds(30), std::nullopt},
      {"0.25", Millis(250), std::nullopt},
      {"-5", Millis(0), std::nullopt},
      {"999999999", hours(24), std::nullopt},  // Below 1e9: a (capped) delay.
      {std::to_string(kReceivedS + 30), std::nullopt, seconds(30)},
      {std::to_string(kReceivedS) + ".123", std::nullopt, Millis(123)},
      {std::to_string(kReceivedS + 30) + "500", std::nullopt, Millis(30'500)},  // Unix ms.
      {"1700000000", std::nullopt, seconds(1'700'000'000 - kReceivedS)},        // In the past.
      {"4000000000", std::nullopt, hours(24)},                                  // Capped.
      {"1e300", std::nullopt, hours(24)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    RateLimitHeaders h = Parse({{"X-RateLimit-Reset", c.value}});
    EXPECT_EQ(h.reset_after, c.reset_after);
    std::optional<Millis> offset;
    if (h.reset_at.has_value()) {
      offset = std::chrono::duration_cast<Millis>(*h.reset_at - kReceived);
    }
    EXPECT_EQ(offset, c.reset_at_offset);
  }
}

// Verifies that a reset in the past (clock skew) suggests no wait rather than a negative one.
TEST(RateLimitHeadersTest, PastResetSuggestsZeroWait) {
  RateLimitHeaders h =
      Parse({{"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "1700000000"}}, 200);
  EXPECT_EQ(h.SuggestedWait(), Millis(0));
}

// Verifies case-insensitive names and the conservative choice among repeated headers.
TEST(RateLimitHeadersTest, MergesRepeatedHeadersConservatively) {
  RateLimitHeaders h = Parse({{"RETRY-AFTER", "5"},
                              {"retry-after", "10"},
                              {"Retry-After", "garbage"},
                              {"X-RateLimit-Remaining", "5"},
                              {"x-ratelimit-remaining", "3, 4"},
                              {"X-RATELIMIT-LIMIT", "10"},
                              {"X-RateLimit-Limit", "8"},
                              {"X-RateLimit-Reset-After", "1.5"},
                              {"X-RateLimit-Reset-After", "2.5"},
                              {"X-RateLimit-Bucket", "first"},
                              {"X-RateLimit-Bucket", "second"},
                              {"X-RateLimit-Global", "false"},
                              {"X-RateLimit-Global", "true"}});
  EXPECT_EQ(h.retry_after, seconds(10));
  EXPECT_EQ(h.remaining, 3);
  EXPECT_EQ(h.limit, 8);
  EXPECT_EQ(h.reset_after, Millis(2'500));
  EXPECT_EQ(h.bucket, "first");
  EXPECT_TRUE(h.global);
}

// Verifies that garbage in every X-RateLimit-* header is ignored field by field.
TEST(RateLimitHeadersTest, IgnoresGarbageValues) {
  const std::string long_label(200, 'b');
  struct Case {
    std::string name;
    std::string value;
  };
  const Case cases[] = {
      {"X-RateLimit-Limit", "-1"},
      {"X-RateLimit-Limit", "lots"},
      {"X-RateLimit-Limit", "1e30"},
      {"X-RateLimit-Remaining", "-1"},
      {"X-RateLimit-Remaining", ""},
      {"X-RateLimit-Reset", "tomorrow"},
      {"X-RateLimit-Reset-After", "nan"},
      {"X-RateLimit-Bucket", "has space"},
      {"X-RateLimit-Bucket", ""},
      {"X-RateLimit-Bucket", long_label},
      {"X-RateLimit-Bucket", "caf\xc3\xa9"},
      {"X-RateLimit-Global", "yes"},
      {"X-RateLimit-Scope", "everyone"},
      {"X-RateLimit", "5"},
      {"", "5"},
      {"Retry-After-Ms", "5"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.value);
    RateLimitHeaders h = Parse({{c.name, c.value}});
    EXPECT_EQ(h.limit, std::nullopt);
    EXPECT_EQ(h.remaining, std::nullopt);
    EXPECT_EQ(h.reset_at, std::nullopt);
    EXPECT_EQ(h.reset_after, std::nullopt);
    EXPECT_EQ(h.retry_after, std::nullopt);
    EXPECT_EQ(h.bucket, std::nullopt);
    EXPECT_FALSE(h.global);
    EXPECT_EQ(h.scope, std::nullopt);
  }
}

// Verifies when SuggestedWait answers and from which field.
TEST(RateLimitHeadersTest, SuggestsWaitTable) {
  struct Case {
    std::string name;
    HttpHeaders headers;
    int status;
    std::optional<Millis> want;
  };
  const Case cases[] = {
      {"no headers", {}, 429, std::nullopt},
      {"429 without usable headers", {{"Retry-After", "soon"}}, 429, std::nullopt},
      {"503 Retry-After", {{"Retry-After", "120"}}, 503, seconds(120)},
      {"301 Retry-After", {{"Retry-After", "3"}}, 301, seconds(3)},
      {"2xx Retry-After is no throttle", {{"Retry-After", "120"}}, 202, std::nullopt},
      {"remaining left",
       {{"X-RateLimit-Remaining", "1"}, {"X-RateLimit-Reset-After", "9"}},
       200,
       std::nullopt},
      {"remaining 0, no reset", {{"X-RateLimit-Remaining", "0"}}, 429, std::nullopt},
      {"remaining 0, epoch reset",
       {{"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", std::to_string(kReceivedS + 7)}},
       200,
       seconds(7)},
      {"Reset-After beats Reset",
       {{"X-RateLimit-Remaining", "0"},
        {"X-RateLimit-Reset", std::to_string(kReceivedS + 30)},
        {"X-RateLimit-Reset-After", "2"}},
       200,
       seconds(2)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Parse(c.headers, c.status).SuggestedWait(), c.want);
  }
}

}  // namespace
}  // namespace egress::adapters
