// What 429s with Retry-After and stated windows teach the destination's own key: a smaller
// burst (Slack) and the bucket the platform states (Discord X-RateLimit-*).
#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

DestinationSpec Spec(Platform platform, std::string target) {
  DestinationSpec spec;
  spec.tenant = "acme";
  spec.platform = platform;
  spec.credential = "token-1";
  spec.target = std::move(target);
  return spec;
}

class SchedulerLearningTest : public ::testing::Test {
 protected:
  SchedulerLearningTest() : scheduler_(clock_, store_, random_, SchedulerOptions{}) {
    // Shared scopes out of the way: these tests are about the destination's own key.
    EXPECT_TRUE(scheduler_.SetDefaultBudget(BudgetName::kTenantEgress, {1000, 1000, 100}).ok());
    EXPECT_TRUE(scheduler_.SetDefaultBudget(BudgetName::kSlackWorkspace, {1000, 1000, 100}).ok());
    EXPECT_TRUE(scheduler_.SetDefaultBudget(BudgetName::kDiscordGlobal, {50, 1000, 50}).ok());
  }

  void Offer(DestinationId id) {
    WorkItem item;
    item.id = "d" + std::to_string(++sequence_);
    item.sequence = sequence_;
    ASSERT_TRUE(scheduler_.Offer(id, std::move(item)).ok());
  }
  // Dispatches the offered head now, or returns false when it must wait.
  bool DispatchNow(uint64_t& sequence) {
    Decision decision = scheduler_.Next();
    if (decision.kind != Decision::Kind::kDispatch) {
      return false;
    }
    sequence = decision.sequence;
    return true;
  }
  Verdict Complete(DestinationId id, uint64_t sequence, int status,
                   std::optional<Millis> retry_after = std::nullopt) {
    DeliveryOutcome outcome;
    outcome.http_status = status;
    outcome.retry_after = retry_after;
    return *scheduler_.OnOutcome(id, sequence, outcome, {0, clock_.WallNow()});
  }

  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  uint64_t sequence_ = 0;
};

// Verifies that a Slack 429 with Retry-After lowers the channel's burst by one, empties its
// meter, and that the next burst after the park stays within the learned burst.
TEST_F(SchedulerLearningTest, SlackRetryAfterLowersChannelBurst) {
  DestinationId channel = *scheduler_.AddDestination(Spec(Platform::kSlack, "C1"));
  EXPECT_EQ(scheduler_.EffectiveBudget(channel, BudgetName::kSlackChannel)->burst, 3);
  uint64_t sent = 0;
  for (int i = 0; i < 2; ++i) {
    Offer(channel);
    ASSERT_TRUE(DispatchNow(sent));
    Complete(channel, sent, 200);
  }
  Offer(channel);
  ASSERT_TRUE(DispatchNow(sent));
  Verdict verdict = Complete(channel, sent, 429, Millis(1000));
  EXPECT_EQ(verdict.kind, VerdictKind::kDefer);
  const Budget learned = *scheduler_.EffectiveBudget(channel, BudgetName::kSlackChannel);
  EXPECT_EQ(learned.burst, 2);
  EXPECT_EQ(learned.limit, 1);
  DestinationView view = *scheduler_.Inspect(channel);
  EXPECT_TRUE(view.budget_learned);
  EXPECT_EQ(view.remaining, 0);
  // After the park (1 s) one unit has refilled: one send, then the meter waits again.
  clock_.Advance(milliseconds(1001));
  WorkItem retry;
  retry.id = "retry";
  retry.sequence = sent;
  ASSERT_TRUE(scheduler_.Offer(channel, std::move(retry)).ok());
  ASSERT_TRUE(DispatchNow(sent));
  Complete(channel, sent, 200);
  Offer(channel);
  EXPECT_FALSE(DispatchNow(sent));
  // A second 429 lowers it to 1, never below.
  clock_.Advance(milliseconds(1001));
  ASSERT_TRUE(DispatchNow(sent));
  Complete(channel, sent, 429, Millis(1000));
  EXPECT_EQ(scheduler_.EffectiveBudget(channel, BudgetName::kSlackChannel)->burst, 1);
  clock_.Advance(milliseconds(2002));
  WorkItem again;
  again.id = "again";
  again.sequence = sent;
  ASSERT_TRUE(scheduler_.Offer(channel, std::move(again)).ok());
  ASSERT_TRUE(DispatchNow(sent));
  Complete(channel, sent, 429, Millis(1000));
  EXPECT_EQ(scheduler_.EffectiveBudget(channel, BudgetName::kSlackChannel)->burst, 1);
}

// Verifies that Discord's stated window (limit 5, remaining 4) lets the remaining four go at
// once, that remaining 0 parks the key until the reset, and that responses without the headers
// return the key to the leaky bucket (burst 1).
TEST_F(SchedulerLearningTest, DiscordStatedWindowBurstsUpToRemaining) {
  DestinationId channel = *scheduler_.AddDestination(Spec(Platform::kDiscord, "channels/1"));
  uint64_t sent = 0;
  Offer(channel);
  ASSERT_TRUE(DispatchNow(sent));
  RateLimitObservation stated;
  stated.limit = 5;
  stated.remaining = 4;
  stated.reset_after = Millis(5000);
  stated.bucket = "abc";
  ASSERT_TRUE(scheduler_.Observe(channel, stated).ok());
  Complete(channel, sent, 200);
  EXPECT_TRUE(scheduler_.Inspect(channel)->stated_window);
  EXPECT_EQ(scheduler_.Inspect(channel)->remaining, 4);
  for (int64_t left = 3; left >= 0; --left) {
    Offer(channel);
    ASSERT_TRUE(DispatchNow(sent)) << "left " << left;
    stated.remaining = left;
    stated.reset_after = Millis(4900);
    ASSERT_TRUE(scheduler_.Observe(channel, stated).ok());
    Complete(channel, sent, 200);
  }
  // Remaining 0: parked until the reset (+ the 50 ms offset), not merely metered.
  Offer(channel);
  EXPECT_FALSE(DispatchNow(sent));
  clock_.Advance(milliseconds(4900));
  EXPECT_FALSE(DispatchNow(sent));
  clock_.Advance(milliseconds(51));
  ASSERT_TRUE(DispatchNow(sent));
  // The headers go away: back to burst 1 at the learned rate.
  ASSERT_TRUE(scheduler_.Observe(channel, RateLimitObservation{}).ok());
  Complete(channel, sent, 200);
  EXPECT_FALSE(scheduler_.Inspect(channel)->stated_window);
  EXPECT_EQ(scheduler_.EffectiveBudget(channel, BudgetName::kDiscordRoute)->burst, 1);
  // A hostile remaining above the limit is held to the limit.
  Offer(channel);
  clock_.Advance(milliseconds(5000));
  ASSERT_TRUE(DispatchNow(sent));
  stated.remaining = 1'000'000;
  ASSERT_TRUE(scheduler_.Observe(channel, stated).ok());
  Complete(channel, sent, 200);
  EXPECT_LE(scheduler_.Inspect(channel)->remaining, 5);
}

}  // namespace
}  // namespace egress::pacing
