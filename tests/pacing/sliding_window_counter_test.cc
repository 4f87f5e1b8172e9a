#include "dispatcher/pacing/sliding_window_counter.h"

#include <deque>
#include <utility>

#include <gtest/gtest.h>

#include "dispatcher/base/random.h"

namespace egress::pacing {
namespace {

// The exact counter the sliding one is held against: every accepted unit is remembered with its
// time and counted while it is inside (now - window, now].
class ExactLogCounter {
 public:
  explicit ExactLogCounter(int64_t window_ms) : window_ms_(window_ms) {}
  int64_t Used(int64_t now_ms) {
    while (!log_.empty() && log_.front().first <= now_ms - window_ms_) {
      used_ -= log_.front().second;
      log_.pop_front();
    }
    return used_;
  }
  void Add(int64_t now_ms, int64_t units) {
    log_.emplace_back(now_ms, units);
    used_ += units;
  }

 private:
  int64_t window_ms_;
  std::deque<std::pair<int64_t, int64_t>> log_;
  int64_t used_ = 0;
};

struct TrafficResult {
  int64_t sliding_accepted = 0;
  int64_t exact_accepted = 0;
  int64_t worst_window = 0;  // most units the sliding counter let into any window
};

// Random arrivals (gaps up to `max_gap_ms`, 1..max_units each) offered to a sliding counter and,
// separately, to an exact log-based limiter with the same limit; the sliding counter's accepted
// units are then counted in every window by an exact log.
TrafficResult RunTraffic(uint64_t seed, int64_t window_ms, int64_t limit, int64_t max_gap_ms,
                         int64_t max_units, int64_t windows) {
  SplitMixRandom random(seed);
  const WindowShape shape = WindowShape::Of(window_ms);
  SlidingWindowCounter sliding;
  ExactLogCounter exact_limiter(window_ms);
  ExactLogCounter audit(window_ms);
  TrafficResult r;
  int64_t now = 1'767'225'600'123;  // not aligned to the window
  const int64_t end = now + windows * window_ms;
  while (now < end) {
    now += static_cast<int64_t>(random.Next() % static_cast<uint64_t>(max_gap_ms + 1));
    const int64_t units =
        1 + static_cast<int64_t>(random.Next() % static_cast<uint64_t>(max_units));
    if (sliding.Decide(now, units, limit).allowed) {
      sliding.Add(shape.ExpiryOf(now), units);
      sliding.Prune(now);
      r.sliding_accepted += units;
      audit.Add(now, units);
      r.worst_window = std::max(r.worst_window, audit.Used(now));
    }
    if (exact_limiter.Used(now) + units <= limit) {
      exact_limiter.Add(now, units);
      r.exact_accepted += units;
    }
  }
  return r;
}

// Verifies that on random traffic that keeps the limit busy, no window ever holds more than the
// limit, and the sliding counter lets through at least 98% of what an exact log-based limiter
// does.
TEST(SlidingWindowCounterTest, NeverOverTheLimitAndUsesAtLeast98PercentAgainstExactLog) {
  struct Case {
    int64_t window_ms, limit, max_gap_ms, max_units;
  };
  for (const Case& c : {Case{10'000, 20, 400, 1}, Case{10'000, 20, 40, 3},
                        Case{60'000, 1000, 20, 5}, Case{86'400'000, 5000, 60'000, 4}}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const TrafficResult r =
          RunTraffic(seed, c.window_ms, c.limit, c.max_gap_ms, c.max_units, 200);
      SCOPED_TRACE(testing::Message()
                   << "window " << c.window_ms << " limit " << c.limit << " seed " << seed);
      EXPECT_LE(r.worst_window, c.limit);
      EXPECT_GE(static_cast<double>(r.sliding_accepted),
                0.98 * static_cast<double>(r.exact_accepted));
    }
  }
}

// Verifies that a burst of 20 at once over a 10 s window is refused at the 21st, and that the
// window opens again slice by slice (not all at once at a boundary), each refusal's wait being
// exactly when the request fits.
TEST(SlidingWindowCounterTest, SlidesOpenSliceBySliceWithExactRetryAfter) {
  const WindowShape shape = WindowShape::Of(10'000);
  ASSERT_EQ(shape.slice_ms, 167);
  SlidingWindowCounter c;
  int64_t now = 1'000'000'000'050;
  // 20 units, one every 100 ms: spread over 2 s, so they leave over 2 s too.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(c.Decide(now, 1, 20).allowed) << i;
    c.Add(shape.ExpiryOf(now), 1);
    now += 100;
  }
  WindowDecision d = c.Decide(now, 1, 20);
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.used, 20);
  EXPECT_GT(d.retry_after_ms, 0);
  EXPECT_LE(d.retry_after_ms, 10'000 + shape.slice_ms);
  EXPECT_FALSE(c.Decide(now + d.retry_after_ms - 1, 1, 20).allowed);
  const WindowDecision later = c.Decide(now + d.retry_after_ms, 1, 20);
  ASSERT_TRUE(later.allowed);
  // Only the oldest slice left: a few units, not the whole limit.
  EXPECT_LT(later.remaining + 1, 20);
  EXPECT_GT(later.used, 10);
  // Once every unit left, the whole limit is back.
  EXPECT_EQ(c.Decide(now + d.reset_after_ms, 20, 20).used, 0);
  EXPECT_TRUE(c.Decide(now + d.reset_after_ms, 20, 20).allowed);
}

// Verifies that a request larger than the limit is refused for good (retry -1), and that a
// refund gives its units back to their slice.
TEST(SlidingWindowCounterTest, OversizedNeverFitsAndRefundsReturnUnits) {
  const WindowShape shape = WindowShape::Of(60'000);
  SlidingWindowCounter c;
  const int64_t now = 5'000'000;
  EXPECT_EQ(c.Decide(now, 11, 10).retry_after_ms, -1);
  c.Add(shape.ExpiryOf(now), 10);
  EXPECT_FALSE(c.Decide(now, 1, 10).allowed);
  c.Add(shape.ExpiryOf(now), -4);
  EXPECT_EQ(c.Used(now), 6);
  c.Add(shape.ExpiryOf(now), -6);
  EXPECT_TRUE(c.empty());
}

// Verifies that memory stays bounded: after a long run with Prune, at most window/slice + 1
// slices are kept.
TEST(SlidingWindowCounterTest, KeepsAtMostOneWindowOfSlices) {
  const WindowShape shape = WindowShape::Of(10'000);
  SlidingWindowCounter c;
  for (int64_t now = 0; now < 1'000'000; now += 7) {
    c.Add(shape.ExpiryOf(now), 1);
    c.Prune(now);
  }
  EXPECT_LE(c.slices().size(), static_cast<size_t>(10'000 / shape.slice_ms + 2));
}

// Verifies that hostile stored values (negative slices, huge units) never wrap.
TEST(SlidingWindowCounterTest, HostileSlicesSaturate) {
  SlidingWindowCounter c;
  c.Add(100, INT64_MAX);
  c.Add(200, INT64_MAX);
  c.Add(300, -5);
  EXPECT_EQ(c.Used(0), INT64_MAX);
  EXPECT_FALSE(c.Decide(0, 1, 1000).allowed);
  EXPECT_EQ(WindowShape::Of(-5).window_ms, 1);
  EXPECT_GT(WindowShape::Of(INT64_MAX).ExpiryOf(INT64_MAX), 0);
}

}  // namespace
}  // namespace egress::pacing
