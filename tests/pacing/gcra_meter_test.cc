#include "dispatcher/pacing/gcra_meter.h"

#include <limits>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

// Verifies that a fresh meter accepts one unit and denies the next for exactly one interval.
TEST(GcraMeterTest, DeniesForExactlyOneIntervalAfterAccept) {
  FakeClock clock;
  GcraMeter meter(clock, Budget{10, 1000, 1});
  GcraDecision first = meter.Consume(1);
  EXPECT_TRUE(first.allowed);
  EXPECT_EQ(first.remaining, 0);
  EXPECT_EQ(first.reset_after, milliseconds(100));
  GcraDecision second = meter.Consume(1);
  EXPECT_FALSE(second.allowed);
  EXPECT_EQ(second.retry_after, milliseconds(100));
}

// Verifies conformance at the boundary: 1 ns early is denied with 1 ns to wait, on time passes.
TEST(GcraMeterTest, ConformsExactlyAtTheBoundary) {
  FakeClock clock;
  GcraMeter meter(clock, Budget{10, 1000, 1});
  ASSERT_TRUE(meter.Consume(1).allowed);
  clock.Advance(milliseconds(100) - std::chrono::nanoseconds(1));
  GcraDecision early = meter.Consume(1);
  EXPECT_FALSE(early.allowed);
  EXPECT_EQ(early.retry_after, std::chrono::nanoseconds(1));
  clock.Advance(std::chrono::nanoseconds(1));
  EXPECT_TRUE(meter.Consume(1).allowed);
}

// Verifies that a burst passes at once, then the meter paces at the limit.
TEST(GcraMeterTest, BurstPassesAtOnceThenPaces) {
  FakeClock clock;
  GcraMeter meter(clock, Budget{1, 1000, 3});
  EXPECT_EQ(meter.Remaining(), 3);
  EXPECT_EQ(meter.Consume(1).remaining, 2);
  EXPECT_EQ(meter.Consume(1).remaining, 1);
  GcraDecision third = meter.Consume(1);
  EXPECT_TRUE(third.allowed);
  EXPECT_EQ(third.remaining, 0);
  EXPECT_EQ(third.reset_after, milliseconds(3000));
  GcraDecision fourth = meter.Consume(1);
  EXPECT_FALSE(fourth.allowed);
  EXPECT_EQ(fourth.retry_after, milliseconds(1000));
  clock.Advance(milliseconds(1000));
  EXPECT_TRUE(meter.Consume(1).allowed);
  EXPECT_FALSE(meter.Consume(1).allowed);
}

// Verifies that a cost of 5 takes 5 units and the wait scales with the cost.
TEST(GcraMeterTest, CostWeightsTakeSeveralUnits) {
  FakeClock clock;
  GcraMeter meter(clock, Budget{10, 1000, 10});
  GcraDecision big = meter.Consume(5);
  EXPECT_TRUE(big.allowed);
  EXPECT_EQ(big.remaining, 5);
  EXPECT_TRUE(meter.Consume(5).allowed);
  GcraDecision denied = meter.Consume(5);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.retry_after, milliseconds(500));
  EXPECT_EQ(meter.NextAvailable(1), milliseconds(100));
}

// Verifies that a cost above the burst passes only through an empty meter.
TEST(GcraMeterTest, CostAboveBurstWaitsForEmptyMeter) {
  FakeClock clock;
  GcraMeter meter(clock, Budget{10, 1000, 1});
  ASSERT_TRUE(meter.Consume(1).allowed);
  EXPECT_EQ(meter.NextAvailable(5), milliseconds(100));
  clock.Advance(milliseconds(100));
  EXPECT_TRUE(meter.Consume(5).allowed);
  EXPECT_EQ(meter.NextAvailable(1), milliseconds(500));
}

// Verifies that a denial takes nothing: the wait does not grow with denied attempts.
TEST(GcraMeterTest, DenialTakesNothing) {
  FakeClock clock;
  GcraMeter meter(clock, Budget{2, 1000, 1});
  ASSERT_TRUE(meter.Consume(1).allowed);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(meter.Consume(1).retry_after, milliseconds(500));
  }
}

// Verifies that the interval is rounded up so a meter never runs faster than its budget.
TEST(GcraMeterTest, RoundsIntervalUp) {
  GcraParams params = GcraParams::FromBudget(Budget{3, 1000, 1});
  EXPECT_EQ(params.interval_ns, 333'333'334);
  EXPECT_EQ(params.depth, 1);
}

// Verifies the pure function's reset_after and remaining on denial.
TEST(GcraMeterTest, EvaluateReportsResetOnDenial) {
  GcraParams params{100, 4};
  GcraDecision d = GcraEvaluate(1000, params, 2, 700);
  // tat 1000, now 700: 300 ns queued of 400 depth: one unit free, two asked.
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 1);
  EXPECT_EQ(d.retry_after.count(), 100);
  EXPECT_EQ(d.reset_after.count(), 300);
  EXPECT_EQ(d.tat_ns, 1000);
}

// Verifies the arithmetic cannot wrap (a property test over extreme values; under the
// sanitizer build, UBSan would also report any signed overflow): for stored times, clocks,
// intervals, depths and costs at and near the ends of int64, every answer keeps its invariants —
// an acceptance moves the stored time forward and never behind `now`, a denial keeps it, waits
// are never negative, remaining stays in [0, depth] — and a budget at the edges of its range
// makes a usable meter.
TEST(GcraMeterTest, ExtremeValuesSaturateInsteadOfWrapping) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t times[] = {kMin,          kMin + 1, -1'000'000'000,   -1,       0,   1,
                           1'000'000'000, kMax / 2, kMax - 1'000'000, kMax - 1, kMax};
  const int64_t intervals[] = {1,        2,   1'000'000, 1'000'000'000'000, kMax / 1'000'000,
                               kMax / 2, kMax};
  const int64_t depths[] = {1, 2, 1000, 1'000'000'000, kMax / 2, kMax};
  const int64_t costs[] = {1, 7, 1'000'000};
  size_t cases = 0;
  for (int64_t tat : times) {
    for (int64_t now : times) {
      for (int64_t interval : intervals) {
        for (int64_t depth : depths) {
          for (int64_t cost : costs) {
            const GcraParams params{.interval_ns = interval, .depth = depth};
            const GcraDecision d = GcraEvaluate(tat, params, cost, now);
            ++cases;
            SCOPED_TRACE(::testing::Message()
                         << "tat=" << tat << " now=" << now << " interval=" << interval
                         << " depth=" << depth << " cost=" << cost);
            EXPECT_GE(d.retry_after.count(), 0);
            EXPECT_GE(d.reset_after.count(), 0);
            EXPECT_GE(d.remaining, 0);
            EXPECT_LE(d.remaining, depth);
            if (d.allowed) {
              EXPECT_EQ(d.retry_after.count(), 0);
              EXPECT_GE(d.tat_ns, std::max(tat, now));
              EXPECT_GE(d.tat_ns, now);
            } else {
              EXPECT_EQ(d.tat_ns, tat);
              EXPECT_GT(d.retry_after.count(), 0);
            }
            EXPECT_GE(GcraRemaining(tat, params, now), 0);
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 11u * 11 * 7 * 6 * 3);
  // The corners of a budget's range make meters that pace as they say.
  FakeClock clock;
  GcraMeter slowest(clock, Budget{1, kMaxBudgetScaleMs, 1});
  EXPECT_TRUE(slowest.Consume(1).allowed);
  EXPECT_EQ(slowest.NextAvailable(1), milliseconds(kMaxBudgetScaleMs));
  GcraMeter fastest(clock, Budget{kMaxBudgetLimit, 1, kMaxBudgetBurst});
  EXPECT_TRUE(fastest.Consume(1'000'000).allowed);
  EXPECT_EQ(fastest.Remaining(), kMaxBudgetBurst - 1'000'000);
}

// Verifies a request whose cost times the interval overflows int64 does not pass a meter that
// is not empty (two saturated products once cancelled out in allow_at).
TEST(GcraMeterTest, HugeCostDoesNotPassABusyMeter) {
  const GcraParams slow{.interval_ns = int64_t{1} << 50, .depth = 1};
  const GcraDecision first = GcraEvaluate(0, slow, 1'000'000, 0);
  ASSERT_TRUE(first.allowed);  // an empty meter lets a cost above its depth through
  const GcraDecision second = GcraEvaluate(first.tat_ns, slow, 1'000'000, 1);
  EXPECT_FALSE(second.allowed);
  EXPECT_GT(second.retry_after.count(), 0);
}

// Verifies that a large cost through a slow meter is metered, not waved through: 10^6 units of
// one per 3 hours (1.08e19 ns, past 2^63) pass an empty meter once, then the meter stays closed,
// also to the next request of the same cost, also at the slowest budget. Saturating each product
// at INT64_MAX let new_tat and depth x interval cancel, and every such request passed.
TEST(GcraMeterTest, CostBeyondInt64NanosStillWaits) {
  for (const int64_t scale_ms : {int64_t{3 * 3600 * 1000}, kMaxBudgetScaleMs}) {
    SCOPED_TRACE(scale_ms);
    const GcraParams slow = GcraParams::FromBudget(Budget{1, scale_ms, 1});
    const int64_t now = 1'000'000'000;
    const GcraDecision first = GcraEvaluate(0, slow, 1'000'000, now);
    ASSERT_TRUE(first.allowed);
    EXPECT_EQ(first.tat_ns, std::numeric_limits<int64_t>::max());
    for (const int64_t cost : {int64_t{1'000'000}, int64_t{1}}) {
      const GcraDecision again = GcraEvaluate(first.tat_ns, slow, cost, now + slow.interval_ns);
      EXPECT_FALSE(again.allowed) << cost;
      EXPECT_GT(again.retry_after.count(), 0) << cost;
    }
    FakeClock clock;
    GcraMeter meter(clock, Budget{1, scale_ms, 1});
    EXPECT_TRUE(meter.Consume(1'000'000).allowed);
    clock.Advance(milliseconds(scale_ms));
    EXPECT_FALSE(meter.Consume(1'000'000).allowed);
    EXPECT_FALSE(meter.Consume(1).allowed);
  }
}

// Verifies the range of a budget's fields (config, admin API and learned headers share it).
TEST(BudgetTest, ValidOnlyWithinRange) {
  EXPECT_TRUE((Budget{1, 1, 1}.Valid()));
  EXPECT_TRUE((Budget{kMaxBudgetLimit, kMaxBudgetScaleMs, kMaxBudgetBurst}.Valid()));
  EXPECT_FALSE((Budget{0, 1, 1}.Valid()));
  EXPECT_FALSE((Budget{kMaxBudgetLimit + 1, 1, 1}.Valid()));
  EXPECT_FALSE((Budget{1, kMaxBudgetScaleMs + 1, 1}.Valid()));
  EXPECT_FALSE((Budget{1, 1, kMaxBudgetBurst + 1}.Valid()));
  EXPECT_FALSE((Budget{1, -1, 1}.Valid()));
  EXPECT_FALSE((Budget{1, 1, std::numeric_limits<int64_t>::min()}.Valid()));
}

}  // namespace
}  // namespace egress::pacing
