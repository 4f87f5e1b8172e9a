#include "adapters/invalid_request_counter.h"

#include <cstdint>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

using pacing::RateLimitScope;
using std::chrono::minutes;
using std::chrono::seconds;

const SteadyTime kStart = SteadyTime(std::chrono::hours(1000));

// Verifies what Discord counts: 401, 403 and non-shared 429s.
TEST(InvalidRequestCounterTest, CountsOnlyInvalidRequests) {
  EXPECT_TRUE(InvalidRequestCounter::Counts(401, RateLimitScope::kUnknown));
  EXPECT_TRUE(InvalidRequestCounter::Counts(403, RateLimitScope::kUnknown));
  EXPECT_TRUE(InvalidRequestCounter::Counts(429, RateLimitScope::kUser));
  EXPECT_TRUE(InvalidRequestCounter::Counts(429, RateLimitScope::kGlobal));
  EXPECT_FALSE(InvalidRequestCounter::Counts(429, RateLimitScope::kShared));
  EXPECT_FALSE(InvalidRequestCounter::Counts(404, RateLimitScope::kUnknown));
  EXPECT_FALSE(InvalidRequestCounter::Counts(200, RateLimitScope::kUnknown));
  EXPECT_FALSE(InvalidRequestCounter::Counts(500, RateLimitScope::kUnknown));
}

// Verifies the default threshold: the 5,000th invalid request stops the token, others go on.
TEST(InvalidRequestCounterTest, StopsAtDefaultThreshold) {
  InvalidRequestCounter counter;
  for (int i = 0; i < 4999; ++i) {
    EXPECT_FALSE(counter.Record("tok-a", 401, RateLimitScope::kUnknown, kStart).has_value());
  }
  EXPECT_FALSE(counter.Record("tok-a", 429, RateLimitScope::kShared, kStart).has_value());
  std::optional<SteadyTime> stop = counter.Record("tok-a", 403, RateLimitScope::kUnknown, kStart);
  ASSERT_TRUE(stop.has_value());
  EXPECT_GE(*stop, kStart + minutes(10));
  EXPECT_LE(*stop, kStart + minutes(10) + seconds(10));
  EXPECT_EQ(counter.Count("tok-a", kStart), 5000);
  EXPECT_EQ(counter.Count("tok-b", kStart), 0);
  EXPECT_FALSE(counter.StopUntil("tok-b", kStart).has_value());
}

// Verifies the sliding window: requests leave it after ten minutes (one slot of slack), and the
// stop ends when enough old ones have left.
TEST(InvalidRequestCounterTest, SlidesOverTenMinutes) {
  InvalidRequestCounter counter({.threshold = 10, .window = minutes(10)});
  for (int i = 0; i < 6; ++i) {
    (void)counter.Record("t", 401, RateLimitScope::kUnknown, kStart);
  }
  const SteadyTime later = kStart + minutes(5);
  std::optional<SteadyTime> stop;
  for (int i = 0; i < 4; ++i) {
    stop = counter.Record("t", 429, RateLimitScope::kUser, later);
  }
  ASSERT_TRUE(stop.has_value());
  // The first six leave once their 10 s slot has wholly left the window.
  EXPECT_GE(*stop, kStart + minutes(10));
  EXPECT_LE(*stop, kStart + minutes(10) + seconds(10));
  EXPECT_TRUE(counter.StopUntil("t", *stop - seconds(1)).has_value());
  EXPECT_FALSE(counter.StopUntil("t", *stop).has_value());
  EXPECT_EQ(counter.Count("t", *stop), 4);
  EXPECT_EQ(counter.Count("t", later + minutes(11)), 0);
}

// Verifies Sweep forgets tokens with nothing in the window, and the report overload.
TEST(InvalidRequestCounterTest, SweepsIdleTokensAndReadsReports) {
  InvalidRequestCounter counter({.threshold = 2, .window = minutes(1)});
  AttemptReport report;
  report.attempt.http_status = 429;
  report.observation.scope = RateLimitScope::kShared;
  EXPECT_FALSE(counter.Record("a", report, kStart).has_value());
  EXPECT_EQ(counter.Count("a", kStart), 0);
  report.observation.scope = RateLimitScope::kUser;
  (void)counter.Record("a", report, kStart);
  (void)counter.Record("b", 401, RateLimitScope::kUnknown, kStart + seconds(50));
  EXPECT_EQ(counter.tracked_tokens(), 2u);
  counter.Sweep(kStart + seconds(70));
  EXPECT_EQ(counter.tracked_tokens(), 1u);
  EXPECT_EQ(counter.Count("b", kStart + seconds(70)), 1);
}

// Verifies MergeShared: the cluster's counts raise this node's slots (never lower them), so a
// token stops at the threshold of what all nodes sent, and the stop ends when the shared slots
// leave the window; ages outside the window and counts below one are ignored.
TEST(InvalidRequestCounterTest, MergeSharedCountsWhatEveryNodeSent) {
  InvalidRequestCounter counter({.threshold = 10, .window = minutes(10)});  // 10 s slots
  (void)counter.Record("t", 401, RateLimitScope::kUnknown, kStart);
  (void)counter.Record("t", 401, RateLimitScope::kUnknown, kStart);
  EXPECT_EQ(counter.Count("t", kStart), 2);

  // The other nodes sent 4 more now and 5 a minute ago (the shared counts include ours).
  counter.MergeShared("t", {{0, 6}, {6, 5}}, kStart);
  EXPECT_EQ(counter.Count("t", kStart), 11);
  std::optional<SteadyTime> stop = counter.StopUntil("t", kStart);
  ASSERT_TRUE(stop.has_value());
  // Dropping the 5 of a minute ago leaves 6 < 10: the stop ends when that slot leaves.
  EXPECT_GT(*stop, kStart + minutes(8));
  EXPECT_LE(*stop, kStart + minutes(9) + seconds(10));
  EXPECT_FALSE(counter.StopUntil("t", *stop).has_value());

  // A lower shared count does not lower a slot; hostile entries change nothing.
  counter.MergeShared("t", {{0, 1}, {6, 0}, {-1, 1000}, {60, 1000}, {1000000, 5}}, kStart);
  EXPECT_EQ(counter.Count("t", kStart), 11);
  counter.MergeShared("u", {{0, -5}, {61, 7}}, kStart);
  EXPECT_EQ(counter.tracked_tokens(), 1u);

  // A huge shared count is clamped, and the sum of every slot stays finite.
  std::vector<InvalidRequestCounter::SlotCount> huge;
  for (int64_t age = 0; age < InvalidRequestCounter::kSlots; ++age) {
    huge.push_back({age, INT64_MAX});
  }
  counter.MergeShared("v", huge, kStart);
  EXPECT_EQ(counter.Count("v", kStart),
            InvalidRequestCounter::kMaxSharedCount * InvalidRequestCounter::kSlots);
  EXPECT_TRUE(counter.StopUntil("v", kStart).has_value());
}

}  // namespace
}  // namespace egress::adapters
