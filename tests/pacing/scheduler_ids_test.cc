#include <string>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

namespace egress::pacing {
namespace {

// Verifies that every shape of delivery id (ULID, short, long, replaced, withdrawn) comes back
// in the dispatch decision exactly as offered.
TEST(SchedulerIdsTest, DeliveryIdsComeBackExactly) {
  FakeClock clock;
  MemoryBudgetStore store;
  FakeRandom random;
  Scheduler scheduler(clock, store, random, SchedulerOptions{});
  const std::string ids[] = {"01ARZ3NDEKTSV4RRFFQ69G5FAV", "d1",
                             "a-delivery-id-longer-than-fifteen-bytes",
                             "01arz3ndektsv4rrffq69g5fav"};
  uint64_t sequence = 100;
  for (const std::string& id : ids) {
    clock.Advance(std::chrono::seconds(1));  // the tenant's egress budget refills
    DestinationSpec spec;
    spec.tenant = "acme";
    spec.target = "https://a.example/" + id;
    Result<DestinationId> dest = scheduler.AddDestination(spec);
    ASSERT_TRUE(dest.has_value());
    // A long head replaced by an earlier one, then withdrawn, then offered again.
    WorkItem later;
    later.id = "replaced-head-with-a-long-id-text";
    later.sequence = sequence;
    ASSERT_TRUE(scheduler.Offer(*dest, std::move(later)).ok());
    WorkItem item;
    item.id = id;
    item.sequence = --sequence;
    ASSERT_TRUE(scheduler.Offer(*dest, WorkItem(item)).ok());
    ASSERT_TRUE(scheduler.Withdraw(*dest).ok());
    ASSERT_TRUE(scheduler.Offer(*dest, std::move(item)).ok());
    Decision decision = scheduler.Next();
    ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
    EXPECT_EQ(decision.delivery_id, id);
  }
}

}  // namespace
}  // namespace egress::pacing
