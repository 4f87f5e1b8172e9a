#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

DestinationSpec Discord(std::string target, std::string bot = "bot-1") {
  DestinationSpec spec;
  spec.tenant = "acme";
  spec.platform = Platform::kDiscord;
  spec.credential = std::move(bot);
  spec.target = std::move(target);
  return spec;
}

class SchedulerHeadersTest : public ::testing::Test {
 protected:
  SchedulerHeadersTest() : scheduler_(clock_, store_, random_, SchedulerOptions{}) {}

  DestinationId Add(const DestinationSpec& spec) { return *scheduler_.AddDestination(spec); }
  // A webhook destination of tenant acme.
  DestinationId AddHook() {
    DestinationSpec spec = Discord("https://hooks.example/x");
    spec.platform = Platform::kWebhook;
    return Add(spec);
  }
  void OfferOne(DestinationId id) {
    WorkItem item;
    item.id = "d" + std::to_string(++sequence_);
    item.sequence = sequence_;
    ASSERT_TRUE(scheduler_.Offer(id, std::move(item)).ok());
  }
  // A webhook destination of tenant acme, its tenant_egress budget set to `egress`, that has
  // sent one delivery and holds the next: the budget's meter owes one unit.
  DestinationId HookWaitingOnEgress(Budget egress) {
    EXPECT_TRUE(scheduler_.SetTenantBudgets("acme", {{BudgetName::kTenantEgress, egress}}).ok());
    DestinationId dest = AddHook();
    SendOne(dest);
    OfferOne(dest);
    return dest;
  }
  // Dispatches the head of `id` and completes it with 200.
  void SendOne(DestinationId id) {
    OfferOne(id);
    Decision decision = scheduler_.Next();
    ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
    ASSERT_EQ(decision.destination, id);
    DeliveryOutcome ok;
    ok.http_status = 200;
    ASSERT_TRUE(scheduler_.OnOutcome(id, decision.sequence, ok, {0, clock_.WallNow()}).has_value());
  }
  std::string Reason(DestinationId id) { return scheduler_.Inspect(id)->deferral.ToString(); }
  SteadyTime Until(DestinationId id) { return *scheduler_.Inspect(id)->deferral.until; }

  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  uint64_t sequence_ = 0;
};

// Verifies that remaining == 0 with a reset parks the key until the reset (+ offset).
TEST_F(SchedulerHeadersTest, RemainingZeroParksKey) {
  DestinationId dest = Add(Discord("channels/1"));
  SendOne(dest);
  RateLimitObservation observation;
  observation.remaining = 0;
  observation.reset_after = milliseconds(800);
  ASSERT_TRUE(scheduler_.Observe(dest, observation).ok());
  OfferOne(dest);
  Decision wait = scheduler_.Next();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(Reason(dest), "remaining_zero");
  EXPECT_EQ(wait.wake_at, clock_.Now() + milliseconds(850));
  clock_.Advance(milliseconds(850));
  // The park is over; the route's own meter (5 per 5 s) still paces until 1 s.
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);
  EXPECT_EQ(Reason(dest), "budget:discord_route");
  clock_.Advance(milliseconds(150));
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kDispatch);
}

// Verifies that Retry-After parks the key for exactly that long.
TEST_F(SchedulerHeadersTest, RetryAfterParksKey) {
  DestinationId dest = AddHook();
  SendOne(dest);
  RateLimitObservation observation;
  observation.retry_after = milliseconds(5000);
  ASSERT_TRUE(scheduler_.Observe(dest, observation).ok());
  OfferOne(dest);
  EXPECT_EQ(scheduler_.Next().wake_at, clock_.Now() + milliseconds(5000));
  EXPECT_EQ(Reason(dest), "retry_after");
  EXPECT_EQ(scheduler_.Inspect(dest)->deferral.budget, BudgetName::kWebhookDestination);
}

// Verifies that a Discord global 429 parks every key of the token and no other token.
TEST_F(SchedulerHeadersTest, GlobalRateLimitParksWholeToken) {
  DestinationId a = Add(Discord("channels/1"));
  DestinationId b = Add(Discord("channels/2"));
  DestinationId other = Add(Discord("channels/3", "bot-2"));
  SendOne(a);
  RateLimitObservation observation;
  observation.retry_after = milliseconds(2000);
  observation.global = true;
  observation.scope = RateLimitScope::kGlobal;
  ASSERT_TRUE(scheduler_.Observe(a, observation).ok());
  clock_.Advance(milliseconds(1));
  OfferOne(b);
  OfferOne(other);
  Decision decision = scheduler_.Next();
  ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(decision.destination, other);
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);
  EXPECT_EQ(Reason(b), "retry_after");
  EXPECT_EQ(scheduler_.Inspect(b)->deferral.budget, BudgetName::kDiscordGlobal);
}

// Verifies that a shared-scope 429 parks only that resource, not the rest of the token.
TEST_F(SchedulerHeadersTest, SharedScopeParksOnlyThatResource) {
  DestinationId a = Add(Discord("channels/1"));
  DestinationId b = Add(Discord("channels/2"));
  SendOne(a);
  RateLimitObservation observation;
  observation.retry_after = milliseconds(60000);
  observation.scope = RateLimitScope::kShared;
  observation.remaining = 9;
  ASSERT_TRUE(scheduler_.Observe(a, observation).ok());
  clock_.Advance(milliseconds(20));  // global 50/s
  OfferOne(a);
  OfferOne(b);
  Decision decision = scheduler_.Next();
  ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(decision.destination, b);
  EXPECT_EQ(Reason(a), "retry_after");
  EXPECT_EQ(Until(a), clock_.Now() + milliseconds(60000 - 20));
}

// Verifies that a learned limit replaces the configured default for that key.
TEST_F(SchedulerHeadersTest, LearnedLimitReplacesDefault) {
  DestinationId dest = AddHook();
  EXPECT_EQ(*scheduler_.EffectiveBudget(dest, BudgetName::kWebhookDestination),
            (Budget{50, 1000, 1}));
  RateLimitObservation observation;
  observation.limit = 2;
  observation.window = milliseconds(1000);
  ASSERT_TRUE(scheduler_.Observe(dest, observation).ok());
  EXPECT_EQ(*scheduler_.EffectiveBudget(dest, BudgetName::kWebhookDestination),
            (Budget{2, 1000, 1}));
  SendOne(dest);
  OfferOne(dest);
  EXPECT_EQ(scheduler_.Next().wake_at, clock_.Now() + milliseconds(500));
  // An operator override does not undo what the platform said.
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("acme", {{BudgetName::kWebhookDestination, {9, 1000, 1}}}).ok());
  EXPECT_EQ(scheduler_.EffectiveBudget(dest, BudgetName::kWebhookDestination)->limit, 2);
}

// Verifies that raising a budget frees what waits on it at once: the meter's debt is repaid at
// the new pace and the waiters are looked at again, instead of waiting out the old wake-up.
TEST_F(SchedulerHeadersTest, RaisedOverrideReleasesWaitersAtOnce) {
  DestinationId dest = HookWaitingOnEgress({1, 3'600'000, 1});
  Decision wait = scheduler_.Next();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(wait.wake_at, clock_.Now() + milliseconds(3'600'000));
  EXPECT_EQ(Reason(dest), "budget:tenant_egress");
  clock_.Advance(milliseconds(1'000));
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("acme", {{BudgetName::kTenantEgress, {1000, 1'000, 10}}}).ok());
  Decision now = scheduler_.Next();
  ASSERT_EQ(now.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(now.destination, dest);
}

// Verifies that lowering a budget slows what is already owed: the one unit owed at 1 per second
// is then owed at 1 per minute.
TEST_F(SchedulerHeadersTest, LoweredOverrideKeepsTheDebtInUnits) {
  HookWaitingOnEgress({1, 1'000, 1});
  ASSERT_EQ(scheduler_.Next().wake_at, clock_.Now() + milliseconds(1'000));
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("acme", {{BudgetName::kTenantEgress, {1, 60'000, 1}}}).ok());
  Decision wait = scheduler_.Next();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(wait.wake_at, clock_.Now() + milliseconds(60'000));
}

// Verifies that routes reporting one X-RateLimit-Bucket share one meter.
TEST_F(SchedulerHeadersTest, LearnedBucketSharesMeterAcrossRoutes) {
  DestinationSpec post = Discord("channels/1");
  DestinationSpec edit = Discord("channels/1");
  edit.route = "PATCH /channels/:id/messages/:id";
  DestinationId a = Add(post);
  DestinationId b = Add(edit);
  RateLimitObservation observation;
  observation.bucket = "abcd1234";
  ASSERT_TRUE(scheduler_.Observe(a, observation).ok());
  ASSERT_TRUE(scheduler_.Observe(b, observation).ok());
  SendOne(a);
  clock_.Advance(milliseconds(20));
  OfferOne(b);
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);
  EXPECT_EQ(Reason(b), "budget:discord_route");  // 5 per 5 s: the shared meter is spent
}

// Verifies that without a shared bucket the two routes keep separate meters.
TEST_F(SchedulerHeadersTest, UnlearnedRoutesKeepSeparateMeters) {
  DestinationSpec post = Discord("channels/1");
  DestinationSpec edit = Discord("channels/1");
  edit.route = "PATCH /channels/:id/messages/:id";
  DestinationId a = Add(post);
  DestinationId b = Add(edit);
  SendOne(a);
  clock_.Advance(milliseconds(20));
  OfferOne(b);
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kDispatch);
}

// Verifies that a Slack 429 parks the workspace (token + method), so other channels wait too.
TEST_F(SchedulerHeadersTest, SlackRetryAfterParksWorkspace) {
  DestinationSpec c1 = Discord("C1", "xoxb-1");
  c1.platform = Platform::kSlack;
  DestinationSpec c2 = c1;
  c2.target = "C2";
  DestinationId a = Add(c1);
  DestinationId b = Add(c2);
  OfferOne(a);
  Decision decision = scheduler_.Next();
  ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
  DeliveryOutcome limited;
  limited.http_status = 429;
  limited.retry_after = milliseconds(30000);
  Result<Verdict> verdict = scheduler_.OnOutcome(a, decision.sequence, limited, {});
  ASSERT_TRUE(verdict.has_value());
  EXPECT_FALSE(verdict->consumes_attempt);
  OfferOne(b);
  EXPECT_EQ(scheduler_.Next().wake_at, clock_.Now() + milliseconds(30000));
  EXPECT_EQ(Reason(b), "retry_after");
  EXPECT_EQ(scheduler_.Inspect(b)->deferral.budget, BudgetName::kSlackWorkspace);
}

}  // namespace
}  // namespace egress::pacing
