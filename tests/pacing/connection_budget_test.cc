#include "dispatcher/pacing/connection_budget.h"

#include <vector>

#include <gtest/gtest.h>

namespace egress::pacing {
namespace {

constexpr uint32_t kA = 0;  // tenants
constexpr uint32_t kB = 1;

// Verifies that an origin admits up to its connections and then none, and that an origin that
// is not named (or no limit at all) is never limited.
TEST(ConnectionBudgetTest, AdmitsUpToPerOriginLimit) {
  ConnectionBudget budget({.per_origin = 2, .total = 0, .streams = 10});
  const uint32_t o = budget.Acquire("https://hooks.example");
  EXPECT_TRUE(budget.HasRoom(o, kA));
  budget.Take(o, kA, false);
  budget.Take(o, kA, false);
  EXPECT_FALSE(budget.HasRoom(o, kA));
  EXPECT_EQ(budget.in_flight(o), 2);
  EXPECT_EQ(budget.capacity(o), 2);
  EXPECT_EQ(budget.Acquire(""), ConnectionBudget::kNoOrigin);
  EXPECT_TRUE(budget.HasRoom(ConnectionBudget::kNoOrigin, kA));
  ConnectionBudget unlimited({});
  EXPECT_EQ(unlimited.Acquire("https://hooks.example"), ConnectionBudget::kNoOrigin);
}

// Verifies the max-min share: a freed slot goes to the waiting tenant that holds the fewest
// (A holds 3 of 4, B 1: B gets the one A frees), then round the tenant's destinations; a tenant
// that holds as many as another waits its turn (ties go to who was served least recently).
TEST(ConnectionBudgetTest, FreedSlotGoesToSmallestShare) {
  ConnectionBudget budget({.per_origin = 4});
  const uint32_t o = budget.Acquire("https://hooks.example");
  for (int i = 0; i < 3; ++i) {
    budget.Take(o, kA, false);
  }
  budget.Take(o, kB, false);
  for (uint32_t d = 0; d < 4; ++d) {
    budget.Wait(o, kA, 1, d);  // A queued first
  }
  budget.Wait(o, kB, 1, 100);
  budget.Wait(o, kB, 1, 101);
  budget.Give(o, kA);  // A 2, B 1: B
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{100}));
  budget.Take(o, kB, true);
  budget.Give(o, kA);  // A 1, B 2: A
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{0}));
  budget.Take(o, kA, true);
  budget.Give(o, kB);  // A 2, B 1: B
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{101}));
  budget.Take(o, kB, true);
  budget.Give(o, kB);  // B waits no more: A
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{1}));
  EXPECT_EQ(budget.waiting(o), 2u);
}

// Verifies weights: a weight-3 tenant gets three slots for the other's one (shares held / weight).
TEST(ConnectionBudgetTest, WeightScalesShare) {
  ConnectionBudget budget({.per_origin = 4});
  const uint32_t o = budget.Acquire("https://hooks.example");
  constexpr uint32_t kC = 2;
  for (int i = 0; i < 4; ++i) {
    budget.Take(o, kC, false);
  }
  for (uint32_t d = 0; d < 4; ++d) {
    budget.Wait(o, kA, 1, d);
    budget.Wait(o, kB, 3, 100 + d);
  }
  for (int i = 0; i < 4; ++i) {
    budget.Give(o, kC);
  }
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{0, 100, 101, 102}));
}

// Verifies that a returned grant goes to the next waiter, and that nobody overtakes a waiter.
TEST(ConnectionBudgetTest, ReturnedGrantPassesOn) {
  ConnectionBudget budget({.per_origin = 1});
  const uint32_t o = budget.Acquire("https://hooks.example");
  budget.Take(o, kA, false);
  budget.Wait(o, kA, 1, 1);
  budget.Wait(o, kB, 1, 2);
  budget.Give(o, kA);
  const std::vector<uint32_t> first = budget.TakeGrants();
  ASSERT_EQ(first.size(), 1u);
  budget.Return(o, first[0] == 1 ? kA : kB);
  const std::vector<uint32_t> second = budget.TakeGrants();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0], first[0]);
  budget.Take(o, second[0] == 1 ? kA : kB, true);
  EXPECT_EQ(budget.in_flight(o), 1);
}

// Verifies the send gate: with requests leased ahead, a connection freed goes at once to a
// waiting request, the one of the tenant with the fewest on connections, whoever waited first.
TEST(ConnectionBudgetTest, SendGateHandsFreedConnectionBySmallestShare) {
  ConnectionBudget budget({.per_origin = 2, .ahead = 3});
  const uint32_t o = budget.Acquire("https://hooks.example");
  for (int i = 0; i < 4; ++i) {
    budget.Take(o, kA, false);
  }
  budget.Take(o, kB, false);
  EXPECT_FALSE(budget.HasRoom(o, kA));  // 2 connections + 3 ahead
  EXPECT_TRUE(budget.StartSend(o, kA, 1, 1));
  EXPECT_TRUE(budget.StartSend(o, kA, 1, 2));
  EXPECT_FALSE(budget.StartSend(o, kA, 1, 3));
  EXPECT_FALSE(budget.StartSend(o, kA, 1, 4));
  EXPECT_FALSE(budget.StartSend(o, kB, 1, 5));
  EXPECT_EQ(budget.sending(o), 2);
  EXPECT_EQ(budget.waiting_to_send(o), 3u);
  budget.EndSend(o, kA);
  budget.Give(o, kA);
  EXPECT_EQ(budget.TakeSendGrants(), (std::vector<uint64_t>{5}));  // B holds none
  budget.EndSend(o, kA);
  budget.Give(o, kA);
  EXPECT_EQ(budget.TakeSendGrants(), (std::vector<uint64_t>{3}));
  EXPECT_EQ(budget.sending(o), 2);
  EXPECT_EQ(budget.total_connections(), 2);
}

// Verifies Keep: the only connection of a tenant under its share stays its own while others
// wait (its next StartSend goes at once); a tenant over its share, or one nobody waits behind,
// keeps nothing; Unkeep hands the kept one to the waiting request.
TEST(ConnectionBudgetTest, KeepHoldsATenantsOnlyConnectionForItsNextRequest) {
  ConnectionBudget budget({.per_origin = 2, .ahead = 2});
  const uint32_t o = budget.Acquire("https://hooks.example");
  budget.Take(o, kB, false);
  ASSERT_TRUE(budget.StartSend(o, kB, 1, 1));
  EXPECT_FALSE(budget.Keep(o, kB));  // nobody waits: simply ended
  EXPECT_EQ(budget.sending(o), 0);
  budget.Give(o, kB);
  for (int i = 0; i < 3; ++i) {
    budget.Take(o, kA, false);
  }
  budget.Take(o, kB, false);
  ASSERT_TRUE(budget.StartSend(o, kA, 1, 2));
  ASSERT_TRUE(budget.StartSend(o, kB, 1, 3));
  ASSERT_FALSE(budget.StartSend(o, kA, 1, 4));
  EXPECT_FALSE(budget.Keep(o, kA));  // A's own request waits: it takes it, nothing kept
  EXPECT_EQ(budget.TakeSendGrants(), (std::vector<uint64_t>{4}));
  budget.Give(o, kA);
  ASSERT_FALSE(budget.StartSend(o, kA, 1, 5));
  EXPECT_TRUE(budget.Keep(o, kB));  // B's only one, A waits: kept
  EXPECT_TRUE(budget.TakeSendGrants().empty());
  EXPECT_EQ(budget.kept(o, kB), 1);
  EXPECT_EQ(budget.sending(o), 2);
  budget.Give(o, kB);
  budget.Take(o, kB, false);
  EXPECT_TRUE(budget.StartSend(o, kB, 1, 6));  // its next request: on the kept connection
  EXPECT_EQ(budget.kept(o, kB), 0);
  EXPECT_TRUE(budget.Keep(o, kB));
  budget.Unkeep(o, kB);
  EXPECT_EQ(budget.TakeSendGrants(), (std::vector<uint64_t>{5}));  // A's waiting one
  EXPECT_EQ(budget.sending(o), 2);
}

// Verifies that HTTP/2 counts streams: capacity becomes connections × streams, the waiters are
// granted at once, and the total counts connections, not streams.
TEST(ConnectionBudgetTest, MultiplexedOriginCountsStreams) {
  ConnectionBudget budget({.per_origin = 1, .total = 2, .streams = 3});
  const uint32_t o = budget.Acquire("https://api.example");
  budget.Take(o, kA, false);
  budget.Wait(o, kA, 1, 1);
  budget.Wait(o, kA, 1, 2);
  budget.Wait(o, kA, 1, 3);
  budget.SetMultiplexed(o);
  EXPECT_EQ(budget.capacity(o), 3);
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(budget.total_connections(), 1);
}

// Verifies the total: a second origin waits for it although its own connections are free, and
// gets the connection another origin frees.
TEST(ConnectionBudgetTest, TotalIsSharedAcrossOrigins) {
  ConnectionBudget budget({.per_origin = 4, .total = 2});
  const uint32_t a = budget.Acquire("https://a.example");
  const uint32_t b = budget.Acquire("https://b.example");
  budget.Take(a, kA, false);
  budget.Take(a, kA, false);
  EXPECT_FALSE(budget.HasRoom(b, kB));
  budget.Wait(b, kB, 1, 9);
  EXPECT_TRUE(budget.TakeGrants().empty());
  budget.Give(a, kA);
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{9}));
  budget.Take(b, kB, true);
  EXPECT_EQ(budget.total_connections(), 2);
}

// Verifies that an origin nobody uses any more is forgotten.
TEST(ConnectionBudgetTest, ForgetsUnusedOrigins) {
  ConnectionBudget budget({.per_origin = 4});
  const uint32_t a = budget.Acquire("https://a.example");
  budget.Take(a, kA, false);
  budget.Release(a);
  EXPECT_EQ(budget.origin_count(), 1u);  // still in flight
  budget.Give(a, kA);
  EXPECT_EQ(budget.origin_count(), 0u);
}

}  // namespace
}  // namespace egress::pacing
