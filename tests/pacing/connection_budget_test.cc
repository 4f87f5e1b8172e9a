#include "dispatcher/pacing/connection_budget.h"

#include <string>
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

// Verifies priority among one tenant's destinations waiting for a slot (issue 33): a freed slot
// goes to its high head, then normal, then bulk, arrival order within each; a head given back
// (`first`) goes before its priority's others only; a head whose priority changed while it
// waited (Rewait) moves to the back of its new priority's; tenants keep their shares: B, holding
// less, is served before A's high head.
TEST(ConnectionBudgetTest, TenantsWaitersGoMostUrgentFirst) {
  ConnectionBudget budget({.per_origin = 1});
  const uint32_t o = budget.Acquire("https://hooks.example");
  budget.Take(o, kA, false);
  budget.Wait(o, kA, 1, 1, Priority::kBulk);
  budget.Wait(o, kA, 1, 2, Priority::kBulk);
  budget.Wait(o, kA, 1, 3, Priority::kNormal);
  budget.Wait(o, kA, 1, 4, Priority::kHigh);
  budget.Wait(o, kA, 1, 5, Priority::kNormal);
  budget.Wait(o, kA, 1, 6, Priority::kBulk, /*first=*/true);
  budget.Wait(o, kA, 1, 7, Priority::kHigh);
  budget.Rewait(o, kA, 2, Priority::kNormal);
  budget.Rewait(o, kB, 2, Priority::kHigh);  // B waits for nothing: no-op
  std::vector<uint32_t> order;
  for (int i = 0; i < 7; ++i) {
    budget.Give(o, kA);
    const std::vector<uint32_t> granted = budget.TakeGrants();
    ASSERT_EQ(granted.size(), 1u);
    order.push_back(granted[0]);
    budget.Take(o, kA, true);
  }
  EXPECT_EQ(order, (std::vector<uint32_t>{4, 7, 3, 5, 2, 6, 1}));

  ConnectionBudget two({.per_origin = 2});
  const uint32_t p = two.Acquire("https://hooks.example");
  two.Take(p, kA, false);
  two.Take(p, kA, false);
  two.Wait(p, kA, 1, 8, Priority::kHigh);
  two.Wait(p, kB, 1, 9, Priority::kBulk);
  two.Give(p, kA);  // A 1, B 0
  EXPECT_EQ(two.TakeGrants(), (std::vector<uint32_t>{9}));
}

// Verifies priority in the send gate: one tenant's requests waiting for a connection take the
// freed ones high first, then normal, then bulk, in arrival order within each.
TEST(ConnectionBudgetTest, SendGateServesATenantsUrgentRequestsFirst) {
  ConnectionBudget budget({.per_origin = 1, .ahead = 5});
  const uint32_t o = budget.Acquire("https://hooks.example");
  for (int i = 0; i < 6; ++i) {
    budget.Take(o, kA, false);
  }
  EXPECT_TRUE(budget.StartSend(o, kA, 1, 1, Priority::kBulk));
  EXPECT_FALSE(budget.StartSend(o, kA, 1, 2, Priority::kBulk));
  EXPECT_FALSE(budget.StartSend(o, kA, 1, 3, Priority::kNormal));
  EXPECT_FALSE(budget.StartSend(o, kA, 1, 4, Priority::kBulk));
  EXPECT_FALSE(budget.StartSend(o, kA, 1, 5, Priority::kHigh));
  EXPECT_FALSE(budget.StartSend(o, kA, 1, 6, Priority::kNormal));
  std::vector<uint64_t> order;
  for (int i = 0; i < 5; ++i) {
    budget.EndSend(o, kA);
    budget.Give(o, kA);
    for (const uint64_t token : budget.TakeSendGrants()) {
      order.push_back(token);
    }
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{5, 3, 6, 2, 4}));
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

// Verifies the total shared by tenant (issue 37): A, alone, holds at most the total less its
// reserve over any number of origins; B, holding none, takes one of the reserve at once; as A's
// connections end they go to B until B holds its share of what is not reserved, while A, over
// its share, waits; an equal weight gives equal shares, a weight of 3 three times as much.
TEST(ConnectionBudgetTest, TotalIsSharedByTenant) {
  ConnectionBudget budget({.per_origin = 1, .total = 16});
  EXPECT_EQ(budget.reserve(), 2);
  std::vector<uint32_t> a;
  for (int i = 0; i < 20; ++i) {
    a.push_back(budget.Acquire("https://a" + std::to_string(i) + ".example"));
  }
  int taken = 0;
  for (uint32_t o : a) {
    if (budget.HasRoom(o, kA)) {
      budget.Take(o, kA, false);
      ++taken;
    } else {
      budget.Wait(o, kA, 1, 1000 + o);
    }
  }
  EXPECT_EQ(taken, 14);
  EXPECT_EQ(budget.tenant_connections(kA), 14);
  std::vector<uint32_t> b;
  for (int i = 0; i < 8; ++i) {
    b.push_back(budget.Acquire("https://b" + std::to_string(i) + ".example"));
  }
  // B gets the reserve at once, then waits for the total.
  EXPECT_TRUE(budget.HasRoom(b[0], kB));
  budget.Take(b[0], kB, false);
  EXPECT_TRUE(budget.HasRoom(b[1], kB));
  budget.Take(b[1], kB, false);
  EXPECT_FALSE(budget.HasRoom(b[2], kB));
  for (size_t i = 2; i < b.size(); ++i) {
    budget.Wait(b[i], kB, 1, 2000 + static_cast<uint32_t>(i));
  }
  // A's connections end: B's share of 14 is 7, so the next five go to B, none to A's waiters.
  for (int i = 0; i < 5; ++i) {
    budget.Give(a[i], kA);
    const std::vector<uint32_t> grants = budget.TakeGrants();
    ASSERT_EQ(grants.size(), 1u) << i;
    EXPECT_GE(grants[0], 2000u);
    budget.Take(b[grants[0] - 2000], kB, true);
  }
  EXPECT_EQ(budget.tenant_connections(kB), 7);
  EXPECT_EQ(budget.tenant_connections(kA), 9);
  // At their shares with the reserve free again... B at 7 of 7 waits; A at 9 is over its 7.
  budget.Give(a[5], kA);
  EXPECT_TRUE(budget.TakeGrants().empty());
  EXPECT_EQ(budget.total_connections(), 15);
  budget.Give(a[6], kA);
  EXPECT_TRUE(budget.TakeGrants().empty());
  // A holds 6: the total has room beyond the reserve again, which goes to the next waiting
  // origin in turn (B's); then A, under its share of 7, takes one of the reserve.
  budget.Give(a[7], kA);
  EXPECT_EQ(budget.TakeGrants().size(), 2u);
  EXPECT_EQ(budget.total_connections(), 15);
  EXPECT_EQ(budget.tenant_connections(kA), 7);
  EXPECT_EQ(budget.tenant_connections(kB), 8);
}

// Verifies a waiter held back by its tenant's part of the total is served once there is room
// (an adversarial review's case: its origin's own slot was full when it began to wait, so it was
// not among the origins waiting for the total, and nothing looked at it again).
TEST(ConnectionBudgetTest, WaiterHeldByItsTenantsPartIsServedLater) {
  ConnectionBudget budget({.per_origin = 1, .total = 8});
  const uint32_t x = budget.Acquire("https://x.example");
  std::vector<uint32_t> y;
  for (int i = 0; i < 5; ++i) {
    y.push_back(budget.Acquire("https://y" + std::to_string(i) + ".example"));
  }
  const uint32_t z1 = budget.Acquire("https://z1.example");
  const uint32_t z2 = budget.Acquire("https://z2.example");
  for (uint32_t o : {x, y[0], y[1], y[2], y[3], y[4]}) {
    ASSERT_TRUE(budget.HasRoom(o, kA));
    budget.Take(o, kA, false);
  }
  for (uint32_t o : {z1, z2}) {
    ASSERT_TRUE(budget.HasRoom(o, kB));
    budget.Take(o, kB, false);
  }
  EXPECT_FALSE(budget.HasRoom(x, kA));
  budget.Wait(x, kA, 1, 100);  // x's one slot is A's: not waiting for the total yet
  budget.Give(x, kA);          // x is free, but A is over its share of a short total
  EXPECT_TRUE(budget.TakeGrants().empty());
  budget.Give(z1, kB);
  budget.Give(z2, kB);
  for (uint32_t o : y) {
    budget.Give(o, kA);
  }
  EXPECT_EQ(budget.TakeGrants(), (std::vector<uint32_t>{100}));
  EXPECT_EQ(budget.waiting(x), 0u);
}

// Verifies weights in the total: with B at weight 3, B's share of what is not reserved is three
// quarters.
TEST(ConnectionBudgetTest, TotalSharesFollowWeights) {
  ConnectionBudget budget({.per_origin = 1, .total = 10, .reserve = 2});
  budget.SetWeight(kB, 3);
  std::vector<uint32_t> a;
  std::vector<uint32_t> b;
  for (int i = 0; i < 10; ++i) {
    a.push_back(budget.Acquire("https://a" + std::to_string(i) + ".example"));
    b.push_back(budget.Acquire("https://b" + std::to_string(i) + ".example"));
  }
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(budget.HasRoom(a[i], kA)) << i;
    budget.Take(a[i], kA, false);
  }
  EXPECT_FALSE(budget.HasRoom(a[8], kA));
  int b_taken = 0;
  for (int round = 0; round < 10; ++round) {
    for (uint32_t o : b) {
      if (budget.in_flight(o) == 0 && budget.HasRoom(o, kB)) {
        budget.Take(o, kB, false);
        ++b_taken;
        break;
      }
    }
    if (budget.total_connections() == 10 && budget.tenant_connections(kA) > 2) {
      budget.Give(a[static_cast<size_t>(budget.tenant_connections(kA)) - 1], kA);
    }
  }
  // B's share of what is not reserved: 8 * 3/4 = 6, and no more while the total is short.
  EXPECT_EQ(budget.tenant_connections(kB), 6);
  EXPECT_EQ(b_taken, 6);
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
