#include "dispatcher/pacing/connection_budget.h"

#include <vector>

#include <gtest/gtest.h>

namespace egress::pacing {
namespace {

// Verifies that an origin admits up to its connections and then none, and that an origin that
// is not named (or no limit at all) is never limited.
TEST(ConnectionBudgetTest, AdmitsUpToPerOriginLimit) {
  ConnectionBudget budget({.per_origin = 2, .total = 0, .streams = 10}, 1);
  const uint32_t o = budget.Acquire("https://hooks.example");
  EXPECT_TRUE(budget.HasRoom(o));
  budget.Take(o, false);
  budget.Take(o, false);
  EXPECT_FALSE(budget.HasRoom(o));
  EXPECT_EQ(budget.in_flight(o), 2);
  EXPECT_EQ(budget.capacity(o), 2);
  EXPECT_EQ(budget.Acquire(""), ConnectionBudget::kNoOrigin);
  EXPECT_TRUE(budget.HasRoom(ConnectionBudget::kNoOrigin));
  ConnectionBudget unlimited({}, 1);
  EXPECT_EQ(unlimited.Acquire("https://hooks.example"), ConnectionBudget::kNoOrigin);
}

// Verifies that freed connections alternate between two waiting tenants, whoever queued first,
// and that a weight-2 tenant gets two for the other's one.
TEST(ConnectionBudgetTest, FreedConnectionsGoRoundTenantsByWeight) {
  ConnectionBudget budget({.per_origin = 1}, 1);
  const uint32_t o = budget.Acquire("https://hooks.example");
  budget.Take(o, false);
  for (uint32_t d = 0; d < 6; ++d) {
    budget.Wait(o, /*tenant=*/0, /*weight=*/1, d, 1);  // tenant 0 queued first, 6 of them
  }
  budget.Wait(o, 1, 2, 100, 1);
  budget.Wait(o, 1, 2, 101, 1);
  budget.Wait(o, 1, 2, 102, 1);
  budget.Wait(o, 1, 2, 103, 1);
  std::vector<uint32_t> order;
  for (int i = 0; i < 6; ++i) {
    budget.Give(o);
    std::vector<uint32_t> grants = budget.TakeGrants();
    ASSERT_EQ(grants.size(), 1u);
    order.push_back(grants[0]);
    budget.Take(o, true);
  }
  EXPECT_EQ(order, (std::vector<uint32_t>{0, 100, 101, 1, 102, 103}));
  EXPECT_EQ(budget.waiting(o), 4u);
}

// Verifies that a head that costs more than the quantum still gets its turn (no endless loop).
TEST(ConnectionBudgetTest, CostlyHeadsAreServed) {
  ConnectionBudget budget({.per_origin = 1}, 1);
  const uint32_t o = budget.Acquire("https://hooks.example");
  budget.Take(o, false);
  budget.Wait(o, 0, 1, 7, 1'000'000);
  budget.Wait(o, 1, 1, 8, 1);
  budget.Give(o);
  std::vector<uint32_t> first = budget.TakeGrants();
  ASSERT_EQ(first.size(), 1u);
  budget.Take(o, true);
  budget.Give(o);
  std::vector<uint32_t> second = budget.TakeGrants();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(first[0], second[0]);
}

// Verifies that a returned grant goes to the next waiter, and that nobody overtakes a waiter.
TEST(ConnectionBudgetTest, ReturnedGrantPassesOn) {
  ConnectionBudget budget({.per_origin = 1}, 1);
  const uint32_t o = budget.Acquire("https://hooks.example");
  budget.Take(o, false);
  budget.Wait(o, 0, 1, 1, 1);
  budget.Wait(o, 1, 1, 2, 1);
  budget.Give(o);
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{1}));
  EXPECT_FALSE(budget.HasRoom(o));  // reserved for 1
  budget.Return(o);
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{2}));
  budget.Take(o, true);
  EXPECT_EQ(budget.in_flight(o), 1);
}

// Verifies that HTTP/2 counts streams: capacity becomes connections × streams, the waiters are
// granted at once, and the total counts connections, not streams.
TEST(ConnectionBudgetTest, MultiplexedOriginCountsStreams) {
  ConnectionBudget budget({.per_origin = 1, .total = 2, .streams = 3}, 1);
  const uint32_t o = budget.Acquire("https://api.example");
  budget.Take(o, false);
  budget.Wait(o, 0, 1, 1, 1);
  budget.Wait(o, 0, 1, 2, 1);
  budget.Wait(o, 0, 1, 3, 1);
  budget.SetMultiplexed(o);
  EXPECT_EQ(budget.capacity(o), 3);
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(budget.total_connections(), 1);
}

// Verifies the total: a second origin waits for it although its own connections are free, and
// gets the connection another origin frees.
TEST(ConnectionBudgetTest, TotalIsSharedAcrossOrigins) {
  ConnectionBudget budget({.per_origin = 4, .total = 2}, 1);
  const uint32_t a = budget.Acquire("https://a.example");
  const uint32_t b = budget.Acquire("https://b.example");
  budget.Take(a, false);
  budget.Take(a, false);
  EXPECT_FALSE(budget.HasRoom(b));
  budget.Wait(b, 1, 1, 9, 1);
  EXPECT_TRUE(budget.TakeGrants().empty());
  budget.Give(a);
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{9}));
  budget.Take(b, true);
  EXPECT_EQ(budget.total_connections(), 2);
}

// Verifies that an origin nobody uses any more is forgotten.
TEST(ConnectionBudgetTest, ForgetsUnusedOrigins) {
  ConnectionBudget budget({.per_origin = 4}, 1);
  const uint32_t a = budget.Acquire("https://a.example");
  budget.Take(a, false);
  budget.Release(a);
  EXPECT_EQ(budget.origin_count(), 1u);  // still in flight
  budget.Give(a);
  EXPECT_EQ(budget.origin_count(), 0u);
}

}  // namespace
}  // namespace egress::pacing
