#include "dispatcher/pacing/scheduler.h"

#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

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

WorkItem Item(uint64_t sequence, std::string ordering_key = "") {
  WorkItem item;
  item.id = "d" + std::to_string(sequence);
  item.sequence = sequence;
  item.ordering_key = std::move(ordering_key);
  return item;
}

DeliveryOutcome Http(int status) {
  DeliveryOutcome outcome;
  outcome.http_status = status;
  return outcome;
}

class SchedulerTest : public ::testing::Test {
 protected:
  explicit SchedulerTest(SchedulerOptions options = {})
      : scheduler_(clock_, store_, random_, std::move(options)) {}

  DestinationId Add(const DestinationSpec& spec) {
    Result<DestinationId> id = scheduler_.AddDestination(spec);
    EXPECT_TRUE(id.has_value());
    return *id;
  }
  std::string Reason(DestinationId id) { return scheduler_.Inspect(id)->deferral.ToString(); }
  Verdict Finish(DestinationId id, uint64_t sequence, int status) {
    Result<Verdict> verdict = scheduler_.OnOutcome(id, sequence, Http(status), {});
    EXPECT_TRUE(verdict.has_value());
    return *verdict;
  }

  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
};

// Verifies that an offered head is dispatched and the engine then has nothing to do.
TEST_F(SchedulerTest, DispatchesOfferedHead) {
  DestinationId dest = Add(Webhook("https://a.example/hook"));
  ASSERT_TRUE(scheduler_.Offer(dest, Item(1)).ok());
  Decision decision = scheduler_.Next();
  ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(decision.destination, dest);
  EXPECT_EQ(decision.delivery_id, "d1");
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
}

// Verifies that a budget denial defers with budget:<name> and the exact wake time.
TEST_F(SchedulerTest, DefersWithBudgetReasonUntilExactTime) {
  DestinationId dest = Add(Webhook("https://a.example/hook"));
  ASSERT_TRUE(scheduler_.Offer(dest, Item(1)).ok());
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kDispatch);
  Finish(dest, 1, 200);
  ASSERT_TRUE(scheduler_.Offer(dest, Item(2)).ok());
  Decision wait = scheduler_.Next();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(wait.wake_at, clock_.Now() + milliseconds(20));  // 50/s
  EXPECT_EQ(Reason(dest), "budget:webhook_destination");
  clock_.Advance(milliseconds(20));
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kDispatch);
}

// Verifies nested scopes: a tenant-wide denial takes nothing from the destination's own key.
TEST_F(SchedulerTest, NestedScopesAreAllOrNothing) {
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("acme", {{BudgetName::kTenantEgress, {1, 1000, 1}}}).ok());
  DestinationId a = Add(Webhook("https://a.example/hook"));
  DestinationId b = Add(Webhook("https://b.example/hook"));
  ASSERT_TRUE(scheduler_.Offer(a, Item(1)).ok());
  ASSERT_TRUE(scheduler_.Offer(b, Item(1)).ok());
  ASSERT_EQ(scheduler_.Next().destination, a);
  Decision wait = scheduler_.Next();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(Reason(b), "budget:tenant_egress");
  EXPECT_EQ(wait.wake_at, clock_.Now() + milliseconds(1000));
  clock_.Advance(milliseconds(1000));
  Decision next = scheduler_.Next();
  ASSERT_EQ(next.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(next.destination, b);
}

// Verifies waiters first on a shared scope: a head that arrives while destinations wait in the
// tenant scope's FIFO queues behind them instead of taking the unit the first of them is due, so
// the scope serves its destinations in the order they came to wait (b, c, then a again).
TEST_F(SchedulerTest, SharedScopeServesItsWaitersBeforeANewHead) {
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("acme", {{BudgetName::kTenantEgress, {1, 1000, 1}}}).ok());
  DestinationId a = Add(Webhook("https://a.example/hook"));
  DestinationId b = Add(Webhook("https://b.example/hook"));
  DestinationId c = Add(Webhook("https://c.example/hook"));
  for (DestinationId d : {a, b, c}) {
    ASSERT_TRUE(scheduler_.Offer(d, Item(1)).ok());
  }
  ASSERT_EQ(scheduler_.Next().destination, a);
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);  // b, then c, wait on the tenant
  Finish(a, 1, 200);
  clock_.Advance(milliseconds(1000));
  ASSERT_TRUE(scheduler_.Offer(a, Item(2)).ok());  // a's next head, ready before b is released
  Decision first = scheduler_.Next();
  ASSERT_EQ(first.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(first.destination, b);
  EXPECT_EQ(Reason(a), "budget:tenant_egress");
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);
  clock_.Advance(milliseconds(1000));
  Decision second = scheduler_.Next();
  ASSERT_EQ(second.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(second.destination, c);
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);
  clock_.Advance(milliseconds(1000));
  Decision third = scheduler_.Next();
  ASSERT_EQ(third.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(third.destination, a);
}

// Verifies that new deployment defaults (a config reload) apply at once to live scopes: a
// destination held by the old tenant_egress budget goes now, a tenant's override stays, and an
// invalid budget changes nothing.
TEST_F(SchedulerTest, SetDefaultBudgetsRepacesLiveScopes) {
  ASSERT_TRUE(scheduler_.SetDefaultBudget(BudgetName::kTenantEgress, {1, 1000, 1}).ok());
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("beta", {{BudgetName::kTenantEgress, {1, 1000, 1}}}).ok());
  DestinationId a = Add(Webhook("https://a.example/hook"));
  DestinationId b = Add(Webhook("https://b.example/hook"));
  DestinationId c = Add(Webhook("https://c.example/hook", "beta"));
  ASSERT_TRUE(scheduler_.Offer(a, Item(1)).ok());
  ASSERT_TRUE(scheduler_.Offer(b, Item(1)).ok());
  ASSERT_EQ(scheduler_.Next().destination, a);
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);
  EXPECT_EQ(Reason(b), "budget:tenant_egress");

  const Budget bad{0, 1000, 1};
  Status invalid = scheduler_.SetDefaultBudgets({{BudgetName::kTenantEgress, bad}});
  EXPECT_EQ(invalid.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(scheduler_.EffectiveBudget(b, BudgetName::kTenantEgress)->limit, 1);

  const Budget roomy{1000, 1000, 1000};
  ASSERT_TRUE(scheduler_.SetDefaultBudgets({{BudgetName::kTenantEgress, roomy}}).ok());
  EXPECT_EQ(*scheduler_.EffectiveBudget(b, BudgetName::kTenantEgress), roomy);
  Decision next = scheduler_.Next();  // no time has passed
  ASSERT_EQ(next.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(next.destination, b);
  // beta's override wins over the new default.
  EXPECT_EQ(scheduler_.EffectiveBudget(c, BudgetName::kTenantEgress)->limit, 1);
}

// Verifies that a disabled destination's head is deferred (not dropped) and goes on Enable.
TEST_F(SchedulerTest, DisabledDestinationDefersUntilEnabled) {
  DestinationId dest = Add(Webhook("https://gone.example/hook"));
  ASSERT_TRUE(scheduler_.Disable(dest, "webhook 410").ok());
  ASSERT_TRUE(scheduler_.Offer(dest, Item(1)).ok());
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
  Result<DestinationView> view = scheduler_.Inspect(dest);
  EXPECT_TRUE(view->has_head);
  EXPECT_EQ(view->deferral.ToString(), "destination_disabled");
  EXPECT_EQ(view->deferral.detail, "webhook 410");
  ASSERT_TRUE(scheduler_.Enable(dest).ok());
  EXPECT_EQ(scheduler_.Next().delivery_id, "d1");
}

// Verifies that a paused destination keeps its head, deferred with reason paused (the wait
// observer told, with no end time), while another of its tenant goes on; that a delivery in
// flight when it was paused finishes and the next head is held; and that Resume lets it go.
TEST_F(SchedulerTest, PausedDestinationHoldsItsHeadUntilResumed) {
  std::vector<Deferral> told;
  scheduler_.SetWaitObserver([&](DestinationId, const Deferral& wait) { told.push_back(wait); });
  const Budget roomy{1000, 1000, 1000};
  ASSERT_TRUE(scheduler_
                  .SetDefaultBudgets({{BudgetName::kTenantEgress, roomy},
                                      {BudgetName::kWebhookDestination, roomy}})
                  .ok());
  DestinationId paused = Add(Webhook("https://paused.example/hook"));
  DestinationId other = Add(Webhook("https://other.example/hook"));
  ASSERT_TRUE(scheduler_.Offer(paused, Item(1)).ok());
  ASSERT_EQ(scheduler_.Next().delivery_id, "d1");  // in flight when the pause comes
  ASSERT_TRUE(scheduler_.Pause(paused, "p1: incident 42").ok());
  ASSERT_TRUE(scheduler_.Offer(paused, Item(2)).ok());
  ASSERT_TRUE(scheduler_.Offer(other, Item(10)).ok());
  Decision next = scheduler_.Next();
  ASSERT_EQ(next.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(next.delivery_id, "d10");
  EXPECT_NE(scheduler_.Next().kind, Decision::Kind::kDispatch);
  Result<DestinationView> view = scheduler_.Inspect(paused);
  EXPECT_TRUE(view->has_head);
  EXPECT_TRUE(view->paused);
  EXPECT_FALSE(view->disabled);
  EXPECT_EQ(view->deferral.ToString(), "paused");
  EXPECT_EQ(view->deferral.detail, "p1: incident 42");
  EXPECT_FALSE(view->deferral.until.has_value());
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(told.back().reason, DeferReason::kPaused);
  EXPECT_EQ(told.back().detail, "p1: incident 42");
  EXPECT_FALSE(told.back().until.has_value());
  // The delivery in flight finishes as it would; the next head stays held.
  EXPECT_EQ(Finish(paused, 1, 200).kind, VerdictKind::kDelivered);
  clock_.Advance(milliseconds(10'000));
  EXPECT_NE(scheduler_.Next().kind, Decision::Kind::kDispatch);
  EXPECT_EQ(Reason(paused), "paused");
  ASSERT_TRUE(scheduler_.Resume(paused).ok());
  EXPECT_FALSE(scheduler_.Inspect(paused)->paused);
  EXPECT_EQ(scheduler_.Next().delivery_id, "d2");
}

// Verifies that a pause and a disable are independent: a destination both paused and disabled
// waits for both Resume and Enable, in either order, and shows the disable while it holds.
TEST_F(SchedulerTest, PausedAndDisabledWaitsForBoth) {
  for (const bool resume_first : {true, false}) {
    DestinationId dest = Add(Webhook("https://both.example/hook" + std::to_string(resume_first)));
    ASSERT_TRUE(scheduler_.Pause(dest, "p2").ok());
    ASSERT_TRUE(scheduler_.Disable(dest, "webhook 410").ok());
    ASSERT_TRUE(scheduler_.Offer(dest, Item(1)).ok());
    EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
    EXPECT_EQ(Reason(dest), "destination_disabled");
    if (resume_first) {
      ASSERT_TRUE(scheduler_.Resume(dest).ok());
      EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
      EXPECT_EQ(Reason(dest), "destination_disabled");
      ASSERT_TRUE(scheduler_.Enable(dest).ok());
    } else {
      ASSERT_TRUE(scheduler_.Enable(dest).ok());
      EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
      EXPECT_EQ(Reason(dest), "paused");
      ASSERT_TRUE(scheduler_.Resume(dest).ok());
    }
    Decision next = scheduler_.Next();
    ASSERT_EQ(next.kind, Decision::Kind::kDispatch) << resume_first;
    EXPECT_EQ(next.delivery_id, "d1");
    Finish(dest, 1, 200);
    clock_.Advance(milliseconds(5000));
  }
  EXPECT_EQ(scheduler_.Pause(DestinationId{12345}, "x").code(), Status::Code::kNotFound);
  EXPECT_EQ(scheduler_.Resume(DestinationId{12345}).code(), Status::Code::kNotFound);
}

// Verifies what the wait observer hears of a held head: an earlier head offered in place of a
// held one is held (and told); a disable over a pause shows destination_disabled; an enable that
// leaves the pause tells the observer the head is paused now.
TEST_F(SchedulerTest, PausedHeadsAreToldAsTheyChange) {
  std::vector<std::string> told;
  scheduler_.SetWaitObserver([&](DestinationId, const Deferral& wait) {
    if (wait.reason == DeferReason::kPaused) {
      told.push_back(wait.detail);
    }
  });
  DestinationId dest = Add(Webhook("https://held.example/hook"));
  ASSERT_TRUE(scheduler_.Pause(dest, "p4").ok());
  ASSERT_TRUE(scheduler_.Offer(dest, Item(5)).ok());
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
  EXPECT_EQ(told.size(), 1u);
  ASSERT_TRUE(scheduler_.Offer(dest, Item(3)).ok());  // an earlier head, read late
  EXPECT_EQ(told.size(), 2u);
  EXPECT_EQ(scheduler_.Inspect(dest)->has_head, true);
  ASSERT_TRUE(scheduler_.Disable(dest, "webhook 410").ok());
  EXPECT_EQ(Reason(dest), "destination_disabled");
  ASSERT_TRUE(scheduler_.Enable(dest).ok());
  EXPECT_EQ(Reason(dest), "paused");
  EXPECT_EQ(told.size(), 3u);
  ASSERT_TRUE(scheduler_.Resume(dest).ok());
  EXPECT_EQ(scheduler_.Next().delivery_id, "d3");
}

// Verifies that pausing a head waiting on a budget holds it (its timer no longer fires it) and
// that resuming puts it back under the budget, not past it.
TEST_F(SchedulerTest, PauseHoldsAHeadWaitingOnItsBudget) {
  DestinationId dest = Add(Webhook("https://slow.example/hook"));
  const Budget one{1, 1000, 1};
  ASSERT_TRUE(scheduler_.SetDefaultBudgets({{BudgetName::kWebhookDestination, one}}).ok());
  ASSERT_TRUE(scheduler_.Offer(dest, Item(1)).ok());
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kDispatch);
  Finish(dest, 1, 200);
  ASSERT_TRUE(scheduler_.Offer(dest, Item(2)).ok());
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);
  ASSERT_TRUE(scheduler_.Pause(dest, "p3").ok());
  EXPECT_EQ(Reason(dest), "paused");
  clock_.Advance(milliseconds(2000));
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
  ASSERT_TRUE(scheduler_.Resume(dest).ok());
  EXPECT_EQ(scheduler_.Next().delivery_id, "d2");
  Finish(dest, 2, 200);
  ASSERT_TRUE(scheduler_.Offer(dest, Item(3)).ok());
  ASSERT_TRUE(scheduler_.Pause(dest, "p3").ok());
  ASSERT_TRUE(scheduler_.Resume(dest).ok());
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kWait);  // the budget still holds it
}

// Verifies a shadow budget at half a destination's real rate: nothing is held back (every
// delivery goes at the real pace), and the share the observer hears would have been throttled is
// within 5% of the exact figure (1 - 5/10 = 0.5); another tenant's dispatches are not metered.
TEST_F(SchedulerTest, ShadowBudgetThrottlesNothingAndCountsWhatItWouldHave) {
  const Budget real{10, 1000, 1};
  ASSERT_TRUE(scheduler_
                  .SetDefaultBudgets({{BudgetName::kWebhookDestination, real},
                                      {BudgetName::kTenantEgress, {1000, 1000, 1000}}})
                  .ok());
  ASSERT_TRUE(
      scheduler_.SetTenantShadowBudgets("acme", {{BudgetName::kWebhookDestination, {5, 1000, 1}}})
          .ok());
  int checked = 0, throttled = 0, other = 0;
  DestinationId acme = Add(Webhook("https://acme.example/hook"));
  DestinationId beta = Add(Webhook("https://beta.example/hook", "beta"));
  scheduler_.SetShadowObserver([&](DestinationId id, BudgetName name, bool would) {
    if (!(id == acme)) {
      ++other;
      return;
    }
    EXPECT_EQ(name, BudgetName::kWebhookDestination);
    ++checked;
    throttled += would ? 1 : 0;
  });
  int sent = 0;
  uint64_t sequence = 0;
  const SteadyTime start = clock_.Now();
  while (clock_.Now() - start < milliseconds(20'000)) {
    for (DestinationId dest : {acme, beta}) {
      if (!scheduler_.Inspect(dest)->has_head) {
        ++sequence;
        ASSERT_TRUE(scheduler_.Offer(dest, Item(sequence)).ok());
      }
    }
    Decision next = scheduler_.Next();
    if (next.kind == Decision::Kind::kDispatch) {
      sent += next.destination == acme ? 1 : 0;
      Finish(next.destination, next.sequence, 200);
      continue;
    }
    ASSERT_EQ(next.kind, Decision::Kind::kWait);
    clock_.Advance(std::max(next.wake_at - clock_.Now(), SteadyTime::duration(1)));
  }
  // The real budget's pace: 10 a second for 20 s (plus the first).
  EXPECT_GE(sent, 199);
  EXPECT_LE(sent, 201);
  EXPECT_EQ(checked, sent);
  const double share = static_cast<double>(throttled) / checked;
  EXPECT_NEAR(share, 0.5, 0.05) << throttled << " of " << checked;
  EXPECT_EQ(other, 0);
  // Cleared: no more checks.
  ASSERT_TRUE(scheduler_.SetTenantShadowBudgets("acme", {}).ok());
  const int before = checked;
  clock_.Advance(milliseconds(1000));
  if (!scheduler_.Inspect(acme)->has_head) {
    ASSERT_TRUE(scheduler_.Offer(acme, Item(++sequence)).ok());
  }
  int more = 0;
  for (Decision next = scheduler_.Next(); next.kind == Decision::Kind::kDispatch;
       next = scheduler_.Next()) {
    more += next.destination == acme ? 1 : 0;
  }
  EXPECT_EQ(more, 1);
  EXPECT_EQ(checked, before);
  EXPECT_EQ(
      scheduler_.SetTenantShadowBudgets("acme", {{BudgetName::kTenantEgress, {0, 1000, 1}}}).code(),
      Status::Code::kInvalidArgument);
}

// Verifies the per-destination in-flight cap and that an outcome frees the slot.
TEST_F(SchedulerTest, CapsInFlightPerDestination) {
  DestinationSpec spec = Webhook("https://slow.example/hook");
  spec.platform = Platform::kSlack;
  spec.credential = "xoxb";
  spec.target = "C1";
  DestinationId dest = Add(spec);
  ASSERT_TRUE(scheduler_.Offer(dest, Item(1)).ok());
  ASSERT_EQ(scheduler_.Next().kind, Decision::Kind::kDispatch);
  ASSERT_TRUE(scheduler_.Offer(dest, Item(2)).ok());
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
  EXPECT_EQ(Reason(dest), "concurrency");
  Finish(dest, 1, 200);
  // The channel has a burst of 3, the workspace paces 300/min: one every 200 ms.
  Decision wait = scheduler_.Next();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(Reason(dest), "budget:slack_workspace");
  clock_.Advance(milliseconds(200));
  EXPECT_EQ(scheduler_.Next().delivery_id, "d2");
}

// Verifies that offering an earlier item replaces the head and a later one is refused.
TEST_F(SchedulerTest, EarlierOfferReplacesHead) {
  DestinationId dest = Add(Webhook("https://a.example/hook"));
  ASSERT_TRUE(scheduler_.Offer(dest, Item(5)).ok());
  EXPECT_EQ(scheduler_.Offer(dest, Item(6)).code(), Status::Code::kAlreadyExists);
  ASSERT_TRUE(scheduler_.Offer(dest, Item(3)).ok());
  EXPECT_EQ(scheduler_.Next().delivery_id, "d3");
}

// Verifies that unknown destinations and out-of-protocol calls are errors, not crashes.
TEST_F(SchedulerTest, ReportsProtocolErrors) {
  EXPECT_EQ(scheduler_.Offer(DestinationId{42}, Item(1)).code(), Status::Code::kNotFound);
  DestinationId dest = Add(Webhook("https://a.example/hook"));
  EXPECT_EQ(scheduler_.OnOutcome(dest, 1, Http(200), {}).status().code(),
            Status::Code::kFailedPrecondition);
  WorkItem bad = Item(1);
  bad.cost = 0;
  EXPECT_EQ(scheduler_.Offer(dest, std::move(bad)).code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(scheduler_.Offer(dest, Item(1)).ok());
  EXPECT_EQ(scheduler_.RemoveDestination(dest).code(), Status::Code::kFailedPrecondition);
  ASSERT_TRUE(scheduler_.Withdraw(dest).ok());
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
  EXPECT_TRUE(scheduler_.RemoveDestination(dest).ok());
}

// Verifies that a head whose next attempt is in the future waits with its own reason.
TEST_F(SchedulerTest, HeadWaitsForNotBefore) {
  DestinationId dest = Add(Webhook("https://a.example/hook"));
  WorkItem item = Item(1);
  item.not_before = clock_.Now() + milliseconds(5000);
  item.wait_reason = DeferReason::kBackoff;
  ASSERT_TRUE(scheduler_.Offer(dest, std::move(item)).ok());
  Decision wait = scheduler_.Next();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(wait.wake_at, clock_.Now() + milliseconds(5000));
  EXPECT_EQ(Reason(dest), "backoff");
  clock_.Advance(milliseconds(5000));
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kDispatch);
}

class SchedulerPlatformCapTest : public SchedulerTest {
 protected:
  static SchedulerOptions Options() {
    SchedulerOptions options;
    options.max_in_flight_per_platform[static_cast<size_t>(Platform::kWebhook)] = 1;
    return options;
  }
  SchedulerPlatformCapTest() : SchedulerTest(Options()) {}
};

// Verifies the per-platform cap: a second destination waits until a slot frees.
TEST_F(SchedulerPlatformCapTest, CapsInFlightPerPlatform) {
  DestinationId a = Add(Webhook("https://a.example/hook"));
  DestinationId b = Add(Webhook("https://b.example/hook"));
  ASSERT_TRUE(scheduler_.Offer(a, Item(1)).ok());
  ASSERT_TRUE(scheduler_.Offer(b, Item(1)).ok());
  ASSERT_EQ(scheduler_.Next().destination, a);
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kIdle);
  EXPECT_EQ(Reason(b), "platform_concurrency");
  Finish(a, 1, 200);
  clock_.Advance(milliseconds(1));  // tenant_egress paces 1000/s
  EXPECT_EQ(scheduler_.Next().destination, b);
}

}  // namespace
}  // namespace egress::pacing
