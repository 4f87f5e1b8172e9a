#include "dispatcher/pacing/memory_budget_store.h"

#include <vector>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

GcraParams Params(int64_t limit, int64_t scale_ms, int64_t burst = 1) {
  return GcraParams::FromBudget(Budget{limit, scale_ms, burst});
}

// Verifies that a rescaled meter keeps what it owes in units, paid at the new interval, and
// that a drained or unknown key is left alone.
TEST(MemoryBudgetStoreTest, RescaleKeepsOwedUnits) {
  FakeClock clock;
  MemoryBudgetStore store;
  const GcraParams slow = Params(1, 10'000);
  const GcraParams fast = Params(10, 1'000);  // 100 ms a unit
  std::vector<Charge> path = {{1, slow, 1}};
  ASSERT_TRUE(store.TakeAll(path, clock.Now())->allowed);
  EXPECT_EQ(store.Inspect(1, slow, clock.Now())->reset_after, milliseconds(10'000));
  ASSERT_TRUE(store.Rescale(1, slow, fast, clock.Now()).ok());
  EXPECT_EQ(store.Inspect(1, fast, clock.Now())->reset_after, milliseconds(100));
  ASSERT_TRUE(store.Rescale(1, fast, slow, clock.Now()).ok());
  EXPECT_EQ(store.Inspect(1, slow, clock.Now())->reset_after, milliseconds(10'000));
  clock.Advance(milliseconds(20'000));
  ASSERT_TRUE(store.Rescale(1, slow, fast, clock.Now()).ok());
  EXPECT_EQ(store.Inspect(1, fast, clock.Now())->remaining, 1);
  ASSERT_TRUE(store.Rescale(99, slow, fast, clock.Now()).ok());
  EXPECT_EQ(store.size(), 1u);
}

// Verifies that when an inner scope denies, no unit is taken from the outer one.
TEST(MemoryBudgetStoreTest, TakesAllOrNothing) {
  FakeClock clock;
  MemoryBudgetStore store;
  std::vector<Charge> path = {{1, Params(10, 1000, 10), 1}, {2, Params(1, 1000), 1}};
  ASSERT_TRUE(store.TakeAll(path, clock.Now())->allowed);
  Result<TakeResult> denied = store.TakeAll(path, clock.Now());
  ASSERT_TRUE(denied.has_value());
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->denied_index, 1u);
  EXPECT_EQ(denied->retry_after, milliseconds(1000));
  // The outer scope still has 9 of 10: the denial took nothing.
  EXPECT_EQ(store.Inspect(1, path[0].params, clock.Now())->remaining, 9);
}

// Verifies that acceptance reports the least remaining over the path.
TEST(MemoryBudgetStoreTest, ReportsLeastRemaining) {
  FakeClock clock;
  MemoryBudgetStore store;
  std::vector<Charge> path = {{1, Params(10, 1000, 10), 1}, {2, Params(1, 1000, 3), 1}};
  Result<TakeResult> taken = store.TakeAll(path, clock.Now());
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->remaining, 2);
  EXPECT_EQ(taken->reset_after, milliseconds(1000));
}

// Verifies that a park denies with its own kind until it ends, and a later park wins.
TEST(MemoryBudgetStoreTest, ParkHoldsUntilItEnds) {
  FakeClock clock;
  MemoryBudgetStore store;
  std::vector<Charge> path = {{7, Params(100, 1000), 1}};
  ASSERT_TRUE(store.Park(7, clock.Now() + milliseconds(500), ParkKind::kRemainingZero).ok());
  ASSERT_TRUE(store.Park(7, clock.Now() + milliseconds(200), ParkKind::kRetryAfter).ok());
  Result<TakeResult> denied = store.TakeAll(path, clock.Now());
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->park, ParkKind::kRemainingZero);
  EXPECT_EQ(denied->retry_after, milliseconds(500));
  clock.Advance(milliseconds(500));
  EXPECT_TRUE(store.TakeAll(path, clock.Now())->allowed);
}

// Verifies that Unpark ends a park at once.
TEST(MemoryBudgetStoreTest, UnparkEndsPark) {
  FakeClock clock;
  MemoryBudgetStore store;
  std::vector<Charge> path = {{7, Params(100, 1000), 1}};
  ASSERT_TRUE(store.Park(7, clock.Now() + milliseconds(500), ParkKind::kRetryAfter).ok());
  ASSERT_TRUE(store.Unpark(7).ok());
  EXPECT_TRUE(store.TakeAll(path, clock.Now())->allowed);
}

// Verifies that Sync leaves exactly the stated units (Discord's X-RateLimit-Remaining) under the
// budget's burst, then refills at its rate; that it loosens as well as tightens, clamps what is
// stated to [0, burst], keeps a park, and refuses a budget without an interval.
TEST(MemoryBudgetStoreTest, SyncLeavesExactlyTheStatedUnits) {
  FakeClock clock;
  MemoryBudgetStore store;
  const GcraParams route = Params(5, 5'000, 5);  // a unit every second, burst 5
  std::vector<Charge> path = {{3, route, 1}};
  ASSERT_TRUE(store.Sync(3, route, 4, clock.Now()).ok());
  EXPECT_EQ(store.Inspect(3, route, clock.Now())->remaining, 4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(store.TakeAll(path, clock.Now())->allowed) << i;
  }
  Result<TakeResult> denied = store.TakeAll(path, clock.Now());
  ASSERT_TRUE(denied.has_value());
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->retry_after, milliseconds(1000));
  // The platform says more is left than the meter thinks: it knows best.
  ASSERT_TRUE(store.Sync(3, route, 5, clock.Now()).ok());
  EXPECT_EQ(store.Inspect(3, route, clock.Now())->remaining, 5);
  // Stated values beyond the burst, or below zero, are clamped.
  ASSERT_TRUE(store.Sync(3, route, 99, clock.Now()).ok());
  EXPECT_EQ(store.Inspect(3, route, clock.Now())->remaining, 5);
  ASSERT_TRUE(store.Sync(3, route, -7, clock.Now()).ok());
  EXPECT_EQ(store.Inspect(3, route, clock.Now())->remaining, 0);
  EXPECT_FALSE(store.TakeAll(path, clock.Now())->allowed);
  clock.Advance(milliseconds(1000));
  EXPECT_EQ(store.Inspect(3, route, clock.Now())->remaining, 1);
  // A park outlives a Sync.
  ASSERT_TRUE(store.Park(3, clock.Now() + milliseconds(300), ParkKind::kRetryAfter).ok());
  ASSERT_TRUE(store.Sync(3, route, 5, clock.Now()).ok());
  EXPECT_EQ(store.TakeAll(path, clock.Now())->park, ParkKind::kRetryAfter);
  clock.Advance(milliseconds(300));
  EXPECT_TRUE(store.TakeAll(path, clock.Now())->allowed);
  // No interval: an error, not a division by zero.
  EXPECT_FALSE(store.Sync(3, GcraParams{0, 1}, 1, clock.Now()).ok());
}

// Verifies that Sweep forgets only keys whose state equals a fresh key's.
TEST(MemoryBudgetStoreTest, SweepDropsDrainedKeys) {
  FakeClock clock;
  MemoryBudgetStore store;
  std::vector<Charge> a = {{1, Params(1, 1000), 1}};
  std::vector<Charge> b = {{2, Params(1, 60000), 1}};
  ASSERT_TRUE(store.TakeAll(a, clock.Now())->allowed);
  ASSERT_TRUE(store.TakeAll(b, clock.Now())->allowed);
  clock.Advance(milliseconds(1000));
  EXPECT_EQ(store.Sweep(clock.Now()), 1u);
  EXPECT_EQ(store.size(), 1u);
}

}  // namespace
}  // namespace egress::pacing
