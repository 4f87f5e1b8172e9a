// What 429s with Retry-After and stated windows teach the destination's own key: a smaller
// burst (Slack) and the bucket the platform states (Discord X-RateLimit-*).
#include <algorithm>
#include <string>
#include <vector>

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

// Dispatches every head due now; the sequences in order.
std::vector<uint64_t> DispatchAll(Scheduler& scheduler) {
  std::vector<uint64_t> sent;
  for (Decision d = scheduler.Next(); d.kind == Decision::Kind::kDispatch; d = scheduler.Next()) {
    sent.push_back(d.sequence);
  }
  return sent;
}

// Verifies issue 31's siblings: three channels of one workspace, the profile's burst 3. Beyond
// the confirmed level (1) only one channel at a time tries the next one; its 429 teaches every
// channel burst 1, so no other channel draws a 429 for it, and the others were held, not parked.
TEST_F(SchedulerLearningTest, OneChannelsProbeTeachesEveryChannelOfTheWorkspace) {
  std::vector<DestinationId> channels;
  for (const char* c : {"C1", "C2", "C3"}) {
    channels.push_back(*scheduler_.AddDestination(Spec(Platform::kSlack, c)));
    Offer(channels.back());
  }
  std::vector<uint64_t> sent = DispatchAll(scheduler_);
  ASSERT_EQ(sent.size(), 3u);  // level 1 each: the leaky bucket of the rate
  for (size_t i = 0; i < 3; ++i) {
    Complete(channels[i], sent[i], 200);
    Offer(channels[i]);
  }
  sent = DispatchAll(scheduler_);
  ASSERT_EQ(sent.size(), 1u) << "one probe of level 2 at a time";
  const size_t prober = (sent[0] - 4) % 3;  // sequences 4, 5, 6 are C1, C2, C3's
  Complete(channels[prober], sent[0], 429, Millis(5000));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(scheduler_.EffectiveBudget(channels[i], BudgetName::kSlackChannel)->burst, 1) << i;
    EXPECT_TRUE(scheduler_.Inspect(channels[i])->budget_learned) << i;
  }
  // The others were held at level 1 and are due one second after their first send; the prober
  // waits for its own Retry-After (5 s): the workspace had room, so only its channel is parked.
  EXPECT_TRUE(DispatchAll(scheduler_).empty());
  clock_.Advance(milliseconds(1001));
  sent = DispatchAll(scheduler_);
  EXPECT_EQ(sent.size(), 2u);
  EXPECT_EQ(std::count(sent.begin(), sent.end(), 4 + prober), 0);
}

// Verifies the probe is found again by its destination's index beyond the first chunk of
// destinations (512): the lesson reaches the sibling.
TEST_F(SchedulerLearningTest, AProbeBeyondTheFirstChunkOfDestinationsTeachesToo) {
  for (int i = 0; i < 600; ++i) {
    DestinationSpec filler = Spec(Platform::kSlack, "F" + std::to_string(i));
    filler.credential = "other-workspace";
    ASSERT_TRUE(scheduler_.AddDestination(filler).has_value());
  }
  DestinationId c1 = *scheduler_.AddDestination(Spec(Platform::kSlack, "C1"));
  DestinationId c2 = *scheduler_.AddDestination(Spec(Platform::kSlack, "C2"));
  ASSERT_GT(c1.value, 512u);
  Offer(c1);
  uint64_t sent = 0;
  ASSERT_TRUE(DispatchNow(sent));
  Complete(c1, sent, 200);
  Offer(c1);
  ASSERT_TRUE(DispatchNow(sent)) << "c1 probes level 2";
  Complete(c1, sent, 429, Millis(1000));
  EXPECT_EQ(scheduler_.EffectiveBudget(c2, BudgetName::kSlackChannel)->burst, 1);
}

// Verifies that an accepted probe confirms its level for every sibling at once: the held
// channels go on at level 2 without waiting for their meters, and the next level is probed.
TEST_F(SchedulerLearningTest, AnAcceptedProbeReleasesTheHeldSiblings) {
  std::vector<DestinationId> channels;
  for (const char* c : {"C1", "C2", "C3"}) {
    channels.push_back(*scheduler_.AddDestination(Spec(Platform::kSlack, c)));
    Offer(channels.back());
  }
  std::vector<uint64_t> sent = DispatchAll(scheduler_);
  for (size_t i = 0; i < 3; ++i) {
    Complete(channels[i], sent[i], 200);
    Offer(channels[i]);
  }
  sent = DispatchAll(scheduler_);
  ASSERT_EQ(sent.size(), 1u);
  const size_t prober = (sent[0] - 4) % 3;
  Complete(channels[prober], sent[0], 200);
  sent = DispatchAll(scheduler_);
  EXPECT_EQ(sent.size(), 2u) << "the two held channels, at the confirmed level 2";
}

// Verifies that a 429 while the workspace's own meter is empty parks the whole workspace.
TEST_F(SchedulerLearningTest, A429WithTheWorkspaceFullParksTheWorkspace) {
  ASSERT_TRUE(scheduler_.SetDefaultBudget(BudgetName::kSlackWorkspace, {2, 1000, 2}).ok());
  DestinationId c1 = *scheduler_.AddDestination(Spec(Platform::kSlack, "C1"));
  DestinationId c2 = *scheduler_.AddDestination(Spec(Platform::kSlack, "C2"));
  Offer(c1);
  Offer(c2);
  std::vector<uint64_t> sent = DispatchAll(scheduler_);
  ASSERT_EQ(sent.size(), 2u);  // the workspace's two units
  Complete(c1, sent[0], 200);
  Complete(c2, sent[1], 429, Millis(5000));
  Offer(c1);
  clock_.Advance(milliseconds(1500));
  EXPECT_TRUE(DispatchAll(scheduler_).empty()) << "the workspace is parked for 5 s";
  EXPECT_EQ(scheduler_.Inspect(c1)->deferral.reason, DeferReason::kRetryAfter);
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
