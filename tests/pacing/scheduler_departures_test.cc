// Departures (Scheduler::DepartAt): a request that left late must not let the next one of its key
// reach the platform closer than the meters spaced them, in fake time.

#include <chrono>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"
#include "tests/support/scheduler_driver.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

class SchedulerDeparturesTest : public ::testing::Test {
 protected:
  explicit SchedulerDeparturesTest(double margin = 0)
      : scheduler_(clock_, store_, random_, [&] {
          SchedulerOptions options;
          options.pacing_margin = margin;
          return options;
        }()) {}

  // One request of `id`: dispatched when the meters let it, leaving `late` after that, answered
  // 200 at once. Returns when it left.
  SteadyTime SendLate(DestinationId id, milliseconds late) {
    const uint64_t sequence = driver_.Dispatch(id);
    const SteadyTime let_go = clock_.Now();
    clock_.Advance(late);
    const SteadyTime at = scheduler_.DepartAt(id, let_go);
    EXPECT_GE(at, clock_.Now());
    clock_.Advance(at - clock_.Now());
    driver_.Complete(id, sequence, HttpOutcome(200));
    return at;
  }

  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  SchedulerDriver driver_{clock_, scheduler_};
};

// Verifies that a send that left 15 ms late holds the next one of its key (a webhook at 50/s:
// one every 20 ms) until 20 ms after it left, not 5 ms after as the meter let it go; one on
// time goes at once.
TEST_F(SchedulerDeparturesTest, TheNextAfterALateSendWaitsAnIntervalFromWhenItLeft) {
  const DestinationId hook = *scheduler_.AddDestination(AcmeSpec(Platform::kWebhook, "https://a"));
  const SteadyTime first = SendLate(hook, milliseconds(15));
  const uint64_t next = driver_.Dispatch(hook);
  EXPECT_EQ(clock_.Now(), first + milliseconds(5));  // the meter's 20 ms after it let it go
  EXPECT_EQ(scheduler_.DepartAt(hook, clock_.Now()), first + milliseconds(20));
  clock_.Advance(milliseconds(15));
  driver_.Complete(hook, next, HttpOutcome(200));
  // The key keeps that spacing while it is busy, as if every send were 15 ms late: the next is
  // let go at 40 ms and leaves at 55.
  EXPECT_EQ(SendLate(hook, milliseconds(0)), first + milliseconds(40));
  // Idle for longer than an interval, it leaves as it is let go again.
  clock_.Advance(milliseconds(100));
  const SteadyTime idle = clock_.Now();
  EXPECT_EQ(SendLate(hook, milliseconds(0)), idle);
}

// Verifies that sends all late alike are not held (they reach the platform as spaced as the
// meter let them go), and that another key is not held by this one's lateness.
TEST_F(SchedulerDeparturesTest, SendsAllLateAlikeAreNotHeld) {
  const DestinationId hook = *scheduler_.AddDestination(AcmeSpec(Platform::kWebhook, "https://a"));
  const DestinationId other = *scheduler_.AddDestination(AcmeSpec(Platform::kWebhook, "https://b"));
  for (int i = 0; i < 5; ++i) {
    const uint64_t sequence = driver_.Dispatch(hook);
    const SteadyTime let_go = clock_.Now();
    clock_.Advance(milliseconds(15));
    EXPECT_EQ(scheduler_.DepartAt(hook, let_go), clock_.Now()) << i;
    driver_.Complete(hook, sequence, HttpOutcome(200));
  }
  const uint64_t sequence = driver_.Dispatch(other);
  EXPECT_EQ(scheduler_.DepartAt(other, clock_.Now()), clock_.Now());
  driver_.Complete(other, sequence, HttpOutcome(200));
}

// Verifies that a burst the meters let go together leaves together, even after its first
// left late: they are held only as far apart as they were let go.
TEST_F(SchedulerDeparturesTest, ABurstLetGoTogetherLeavesTogether) {
  const DestinationId hook = *scheduler_.AddDestination(AcmeSpec(Platform::kWebhook, "https://a"));
  const SteadyTime let_go = clock_.Now();
  clock_.Advance(milliseconds(10));
  EXPECT_EQ(scheduler_.DepartAt(hook, let_go), clock_.Now());
  EXPECT_EQ(scheduler_.DepartAt(hook, let_go), clock_.Now());
  EXPECT_EQ(scheduler_.DepartAt(hook, let_go + milliseconds(5)), clock_.Now() + milliseconds(5));
}

// Verifies that the destinations sharing a key are spaced either way round: two LINE users of
// one channel (50 ms apart at 20/s), the later let go leaving first, 60 ms in; the earlier,
// leaving at 70 ms, is held until 110 ms (50 after), not sent 10 ms after the other.
TEST_F(SchedulerDeparturesTest, SendsOfAKeysDestinationsAreSpacedEitherWayRound) {
  ASSERT_TRUE(scheduler_.SetDefaultBudget(BudgetName::kLineChannel, {20, 1000, 1}).ok());
  const DestinationId u1 = *scheduler_.AddDestination(AcmeSpec(Platform::kLine, "U1"));
  const DestinationId u2 = *scheduler_.AddDestination(AcmeSpec(Platform::kLine, "U2"));
  const SteadyTime start = clock_.Now();
  clock_.Advance(milliseconds(60));
  EXPECT_EQ(scheduler_.DepartAt(u2, start + milliseconds(50)), clock_.Now());
  clock_.Advance(milliseconds(10));
  EXPECT_EQ(scheduler_.DepartAt(u1, start), start + milliseconds(110));
  // A send that goes at once beside one still held does not move the key's last one back.
  EXPECT_EQ(scheduler_.DepartAt(u2, start + milliseconds(50)), start + milliseconds(110));
}

// Verifies that a send of cost 3 holds the next one up to three intervals after it: let go 60
// ms later (the meter's three units at 20 ms), the next leaves 60 ms after it left 15 ms late.
TEST_F(SchedulerDeparturesTest, ACostlySendHoldsTheNextItsUnits) {
  const DestinationId hook = *scheduler_.AddDestination(AcmeSpec(Platform::kWebhook, "https://a"));
  const SteadyTime let_go = clock_.Now();
  clock_.Advance(milliseconds(15));
  const SteadyTime left = scheduler_.DepartAt(hook, let_go, 3);
  ASSERT_EQ(left, clock_.Now());
  clock_.Advance(milliseconds(45));
  EXPECT_EQ(scheduler_.DepartAt(hook, let_go + milliseconds(60), 1), left + milliseconds(60));
}

class SchedulerDeparturesMarginTest : public SchedulerDeparturesTest {
 protected:
  SchedulerDeparturesMarginTest() : SchedulerDeparturesTest(0.05) {}
};

// Verifies that the pacing margin is the room lateness has: with 5 %, a webhook's meter lets one
// go every 21 ms and the platform needs 20, so a send that left 1 ms late holds nothing and one
// that left 5 ms late holds the next 4 ms.
TEST_F(SchedulerDeparturesMarginTest, TheMarginIsTheRoomLatenessHas) {
  const DestinationId hook = *scheduler_.AddDestination(AcmeSpec(Platform::kWebhook, "https://a"));
  const SteadyTime start = clock_.Now();
  SendLate(hook, milliseconds(1));
  const uint64_t second = driver_.Dispatch(hook);
  ASSERT_EQ(clock_.Now(), start + milliseconds(21));
  clock_.Advance(milliseconds(5));
  EXPECT_EQ(scheduler_.DepartAt(hook, start + milliseconds(21)), clock_.Now());  // nothing held
  driver_.Complete(hook, second, HttpOutcome(200));
  driver_.Dispatch(hook);
  ASSERT_EQ(clock_.Now(), start + milliseconds(42));
  EXPECT_EQ(scheduler_.DepartAt(hook, clock_.Now()), start + milliseconds(46));  // 20 after 26
}

}  // namespace
}  // namespace egress::pacing
