#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

// Priority (docs/pacing.md, "Priority"): under a scope several destinations share, ready high
// heads go before normal ones and normal before bulk; bulk takes at most its share of each
// shared scope; a destination's own order never changes.
namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

DestinationSpec Webhook(std::string url, std::string tenant = "acme") {
  DestinationSpec spec;
  spec.tenant = std::move(tenant);
  spec.platform = Platform::kWebhook;
  spec.target = std::move(url);
  return spec;
}

WorkItem Item(uint64_t sequence, Priority priority) {
  WorkItem item;
  item.id = "d" + std::to_string(sequence);
  item.sequence = sequence;
  item.priority = priority;
  return item;
}

SchedulerOptions Share(double bulk_share) {
  SchedulerOptions options;
  options.bulk_share = bulk_share;
  return options;
}

class SchedulerPriorityTest : public ::testing::Test {
 protected:
  explicit SchedulerPriorityTest(SchedulerOptions options = Share(1))
      : scheduler_(clock_, store_, random_, std::move(options)) {}

  DestinationId Add(const std::string& url) {
    Result<DestinationId> id = scheduler_.AddDestination(Webhook(url));
    EXPECT_TRUE(id.has_value());
    return *id;
  }
  void Offer(DestinationId id, Priority priority) {
    ASSERT_TRUE(scheduler_.Offer(id, Item(++sequence_, priority)).ok());
  }
  // The next dispatch at the clock's now, answered 200 at once; nullopt when none is due.
  std::optional<DestinationId> Dispatch() {
    Decision decision = scheduler_.Next();
    if (decision.kind != Decision::Kind::kDispatch) {
      return std::nullopt;
    }
    EXPECT_TRUE(scheduler_
                    .OnOutcome(decision.destination, decision.sequence,
                               DeliveryOutcome{.http_status = 200}, {})
                    .has_value());
    return decision.destination;
  }
  std::string Reason(DestinationId id) { return scheduler_.Inspect(id)->deferral.ToString(); }
  void SetTenantEgress(const Budget& budget) {
    ASSERT_TRUE(scheduler_.SetTenantBudgets("acme", {{BudgetName::kTenantEgress, budget}}).ok());
  }

  // Runs `ms` of simulated time: every destination in `work` always has a head of its priority,
  // each dispatch is answered 200 at once. Returns the dispatches per destination.
  std::map<uint32_t, int> Run(const std::vector<std::pair<DestinationId, Priority>>& work,
                              int64_t ms) {
    std::map<uint32_t, int> sent;
    for (const auto& [id, priority] : work) {
      Offer(id, priority);
    }
    const SteadyTime end = clock_.Now() + milliseconds(ms);
    while (clock_.Now() < end) {
      Decision decision = scheduler_.Next();
      if (decision.kind == Decision::Kind::kDispatch) {
        ++sent[decision.destination.value];
        EXPECT_TRUE(scheduler_
                        .OnOutcome(decision.destination, decision.sequence,
                                   DeliveryOutcome{.http_status = 200}, {})
                        .has_value());
        for (const auto& [id, priority] : work) {
          if (id == decision.destination) {
            Offer(id, priority);
          }
        }
        continue;
      }
      if (decision.kind != Decision::Kind::kWait) {
        ADD_FAILURE() << "idle with work offered";
        break;
      }
      clock_.Advance(std::min(decision.wake_at, end) - clock_.Now());
    }
    return sent;
  }

  // Runs `ms` of a broadcast: `destinations` new webhooks, each always with a bulk head.
  // Returns the dispatches.
  int Broadcast(int destinations, int64_t ms) {
    std::vector<std::pair<DestinationId, Priority>> work;
    for (int i = 0; i < destinations; ++i) {
      work.emplace_back(Add("https://b" + std::to_string(i) + ".example/"), Priority::kBulk);
    }
    int total = 0;
    for (const auto& [dest, count] : Run(work, ms)) {
      total += count;
    }
    return total;
  }

  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  uint64_t sequence_ = 0;
};

// Verifies that the units a shared scope refills go to its waiters most urgent first: with the
// tenant's egress at 1/s, a high head offered last goes before the normal and bulk heads that
// came to wait before it, and normal before bulk.
TEST_F(SchedulerPriorityTest, RefilledUnitsGoToTheMostUrgentWaiterFirst) {
  SetTenantEgress({1, 1000, 1});
  DestinationId first = Add("https://first.example/hook");
  DestinationId bulk = Add("https://bulk.example/hook");
  DestinationId normal = Add("https://normal.example/hook");
  DestinationId high = Add("https://high.example/hook");
  Offer(first, Priority::kNormal);
  ASSERT_EQ(Dispatch(), first);
  Offer(bulk, Priority::kBulk);
  Offer(normal, Priority::kNormal);
  ASSERT_EQ(Dispatch(), std::nullopt);  // both wait on the tenant's scope
  Offer(high, Priority::kHigh);
  ASSERT_EQ(Dispatch(), std::nullopt);
  EXPECT_EQ(Reason(high), "budget:tenant_egress");
  clock_.Advance(milliseconds(1000));
  EXPECT_EQ(Dispatch(), high);
  clock_.Advance(milliseconds(1000));
  EXPECT_EQ(Dispatch(), normal);
  clock_.Advance(milliseconds(1000));
  EXPECT_EQ(Dispatch(), bulk);
}

// Verifies the names and lanes of priorities: each name parses back, other text does not, and
// a value out of range (a cast of a stored byte) waits in the nearest lane.
TEST(PriorityTest, NamesParseBackAndLanesHoldOutOfRangeValues) {
  for (Priority p : {Priority::kHigh, Priority::kNormal, Priority::kBulk}) {
    EXPECT_EQ(ParsePriority(PriorityName(p)), p);
    EXPECT_EQ(PriorityLane(p), PriorityIndex(p));
  }
  EXPECT_FALSE(ParsePriority("urgent").has_value());
  EXPECT_FALSE(ParsePriority("").has_value());
  EXPECT_EQ(PriorityLane(static_cast<Priority>(200)), kPriorityCount - 1);
}

// A Scheduler with options of its own, tenant acme's egress out of the way.
struct OwnScheduler {
  explicit OwnScheduler(const SchedulerOptions& options)
      : scheduler(clock, store, random, options) {
    EXPECT_TRUE(
        scheduler.SetTenantBudgets("acme", {{BudgetName::kTenantEgress, {1000, 1000, 1000}}}).ok());
  }
  FakeClock clock;
  MemoryBudgetStore store;
  FakeRandom random;
  Scheduler scheduler;
};

// Verifies the order within one tenant's ready heads: with the platform's in-flight cap at 1,
// the heads ready at once leave high, normal, bulk, whatever order they were offered in.
TEST(SchedulerPriorityReadyTest, ReadyHeadsOfATenantLeaveMostUrgentFirst) {
  SchedulerOptions options;
  options.max_in_flight_per_platform[PlatformIndex(Platform::kWebhook)] = 1;
  OwnScheduler own(options);
  Scheduler& scheduler = own.scheduler;
  std::vector<DestinationId> ids;
  const Priority order[] = {Priority::kBulk, Priority::kNormal, Priority::kBulk, Priority::kHigh};
  for (int i = 0; i < 4; ++i) {
    ids.push_back(
        *scheduler.AddDestination(Webhook("https://h" + std::to_string(i) + ".example/")));
    ASSERT_TRUE(scheduler.Offer(ids.back(), Item(1, order[i])).ok());
  }
  std::vector<DestinationId> sent;
  for (int i = 0; i < 4; ++i) {
    Decision decision = scheduler.Next();
    ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
    sent.push_back(decision.destination);
    ASSERT_TRUE(scheduler
                    .OnOutcome(decision.destination, decision.sequence,
                               DeliveryOutcome{.http_status = 200}, {})
                    .has_value());
  }
  EXPECT_EQ(sent, (std::vector<DestinationId>{ids[3], ids[1], ids[0], ids[2]}));
}

// Verifies the order within one tenant's heads waiting for a connection (a connection pool is a
// shared scope too): with one connection to the receiver's host, the heads that came to wait
// while it was busy get it high first, then normal, then bulk, a bulk head made high while it
// waited (an earlier delivery replayed) among the high ones.
TEST(SchedulerPriorityReadyTest, HeadsWaitingForAConnectionGetItMostUrgentFirst) {
  SchedulerOptions options;
  options.connections = {.per_origin = 1, .total = 0, .streams = 100};
  OwnScheduler own(options);
  Scheduler& scheduler = own.scheduler;
  std::vector<DestinationId> ids;
  for (int i = 0; i < 6; ++i) {
    DestinationSpec spec = Webhook("https://hooks.example/" + std::to_string(i));
    spec.origin = "https://hooks.example";
    ids.push_back(*scheduler.AddDestination(spec));
  }
  ASSERT_TRUE(scheduler.Offer(ids[0], Item(1, Priority::kBulk)).ok());
  Decision busy = scheduler.Next();
  ASSERT_EQ(busy.kind, Decision::Kind::kDispatch);
  const Priority order[] = {Priority::kBulk, Priority::kNormal, Priority::kBulk, Priority::kHigh,
                            Priority::kBulk};
  for (int i = 1; i < 6; ++i) {
    ASSERT_TRUE(scheduler.Offer(ids[i], Item(10, order[i - 1])).ok());
  }
  ASSERT_NE(scheduler.Next().kind, Decision::Kind::kDispatch);
  EXPECT_EQ(scheduler.Inspect(ids[5])->deferral.ToString(), "connections");
  ASSERT_TRUE(scheduler.Offer(ids[5], Item(5, Priority::kHigh)).ok());
  std::vector<DestinationId> sent;
  for (Decision decision = busy; sent.size() < 5;) {
    ASSERT_TRUE(scheduler
                    .OnOutcome(decision.destination, decision.sequence,
                               DeliveryOutcome{.http_status = 200}, {})
                    .has_value());
    decision = scheduler.Next();
    ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
    sent.push_back(decision.destination);
  }
  EXPECT_EQ(sent, (std::vector<DestinationId>{ids[4], ids[5], ids[2], ids[1], ids[3]}));
}

class SchedulerBulkShareTest : public SchedulerPriorityTest {
 protected:
  SchedulerBulkShareTest() : SchedulerPriorityTest(Share(0.8)) {}
};

// Verifies that bulk alone takes its share of a shared scope and no more: 80% of the tenant's
// 50/s over 20 s (800 of 1,000).
TEST_F(SchedulerBulkShareTest, BulkAloneTakesItsShareOfASharedScope) {
  SetTenantEgress({50, 1000, 1});
  const int total = Broadcast(10, 20'000);
  EXPECT_GE(total, 795);
  EXPECT_LE(total, 802);
}

// Verifies the share's purpose: normal work offered during a broadcast keeps at least the rest
// of the scope (here all it asks, 10/s of 50/s), and the broadcast takes what is left up to its
// share; together they never pass the scope's budget.
TEST_F(SchedulerBulkShareTest, NormalWorkKeepsTheRestDuringABroadcast) {
  std::vector<std::pair<DestinationId, Priority>> work;
  for (int i = 0; i < 10; ++i) {
    work.emplace_back(Add("https://b" + std::to_string(i) + ".example/"), Priority::kBulk);
  }
  // Its own key paces the normal destination at 10/s. Bursts above 1 leave the meters room for
  // the moments one scope's unit and the other's fall apart (with burst 1 at both levels each
  // late unit is lost to both).
  DestinationSpec spec = Webhook("https://normal.example/");
  ASSERT_TRUE(scheduler_
                  .SetTenantBudgets("acme", {{BudgetName::kTenantEgress, {50, 1000, 10}},
                                             {BudgetName::kWebhookDestination, {10, 1000, 2}}})
                  .ok());
  DestinationId normal = *scheduler_.AddDestination(spec);
  work.emplace_back(normal, Priority::kNormal);
  std::map<uint32_t, int> sent = Run(work, 20'000);
  int bulk = 0;
  for (const auto& [dest, count] : sent) {
    bulk += dest == normal.value ? 0 : count;
  }
  EXPECT_GE(sent[normal.value], 198);
  EXPECT_LE(sent[normal.value], 201);
  EXPECT_GE(bulk, 795);
  EXPECT_LE(bulk + sent[normal.value], 1010);  // 50/s over 20 s and the burst
}

// Verifies that waiters first holds only among equals: while a bulk head waits in the tenant
// scope's list for its share (the scope itself has units left), a normal head offered then goes
// to the meter at once instead of queueing behind it.
TEST_F(SchedulerBulkShareTest, ANormalHeadPassesBulkWaitersToTheMeter) {
  SetTenantEgress({10, 1000, 10});  // bulk's share: 8 at once, one per 125 ms
  std::vector<DestinationId> bulk;
  for (int i = 0; i < 9; ++i) {
    bulk.push_back(Add("https://b" + std::to_string(i) + ".example/"));
    Offer(bulk.back(), Priority::kBulk);
  }
  for (int i = 0; i < 8; ++i) {
    ASSERT_NE(Dispatch(), std::nullopt) << i;
  }
  ASSERT_EQ(Dispatch(), std::nullopt);
  EXPECT_EQ(Reason(bulk[8]), "bulk_share:tenant_egress");
  DestinationId normal = Add("https://normal.example/");
  Offer(normal, Priority::kNormal);
  EXPECT_EQ(Dispatch(), normal);
  DestinationId high = Add("https://high.example/");
  Offer(high, Priority::kHigh);
  EXPECT_EQ(Dispatch(), high);
  EXPECT_EQ(Dispatch(), std::nullopt);  // the scope's 10 are spent
  clock_.Advance(milliseconds(125));
  EXPECT_EQ(Dispatch(), bulk[8]);
}

// Verifies that a share of 1 caps nothing: bulk alone takes the whole scope.
TEST_F(SchedulerPriorityTest, AShareOfOneCapsNothing) {
  SetTenantEgress({50, 1000, 1});
  const int total = Broadcast(10, 20'000);
  EXPECT_GE(total, 995);
  EXPECT_LE(total, 1001);
}

// Verifies that a waiting destination whose head is replaced by an earlier one of another
// priority (a replayed earlier delivery) moves to that priority's lane: a head made high while
// it waits behind a normal one in the scope's list goes first.
TEST_F(SchedulerPriorityTest, AHeadReplacedWhileWaitingTakesItsNewLane) {
  SetTenantEgress({1, 1000, 1});
  DestinationId first = Add("https://first.example/hook");
  DestinationId normal = Add("https://normal.example/hook");
  DestinationId later = Add("https://later.example/hook");
  Offer(first, Priority::kNormal);
  ASSERT_EQ(Dispatch(), first);
  ASSERT_TRUE(scheduler_.Offer(normal, Item(10, Priority::kNormal)).ok());
  ASSERT_TRUE(scheduler_.Offer(later, Item(10, Priority::kBulk)).ok());
  ASSERT_EQ(Dispatch(), std::nullopt);  // both wait on the tenant's scope
  ASSERT_TRUE(scheduler_.Offer(later, Item(5, Priority::kHigh)).ok());
  EXPECT_EQ(scheduler_.Inspect(later)->head_priority, Priority::kHigh);
  clock_.Advance(milliseconds(1000));
  Decision decision = scheduler_.Next();
  ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(decision.destination, later);
  EXPECT_EQ(decision.sequence, 5u);
}

// Verifies that a scope shared by being a leaf is capped too: the users of one LINE channel all
// take the channel's key, so a bulk broadcast to them takes 80% of it.
TEST_F(SchedulerBulkShareTest, ALineChannelIsASharedScope) {
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("acme", {{BudgetName::kLineChannel, {50, 1000, 1}}}).ok());
  std::vector<std::pair<DestinationId, Priority>> work;
  for (int i = 0; i < 10; ++i) {
    DestinationSpec spec;
    spec.tenant = "acme";
    spec.platform = Platform::kLine;
    spec.credential = "lchan";
    spec.target = "U" + std::to_string(i);
    work.emplace_back(*scheduler_.AddDestination(spec), Priority::kBulk);
  }
  int total = 0;
  for (const auto& [dest, count] : Run(work, 20'000)) {
    total += count;
  }
  EXPECT_GE(total, 795);
  EXPECT_LE(total, 802);
}

}  // namespace
}  // namespace egress::pacing
