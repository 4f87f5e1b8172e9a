#include <map>
#include <queue>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"
#include "tests/support/scheduler_driver.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

DestinationSpec Spec(Platform platform, std::string target) {
  return AcmeSpec(platform, std::move(target));
}

DeliveryOutcome Http(int status) { return HttpOutcome(status); }

class SchedulerAdaptiveTest : public ::testing::Test {
 protected:
  SchedulerAdaptiveTest() : scheduler_(clock_, store_, random_, SchedulerOptions{}) {}

  DestinationId Add(const DestinationSpec& spec) { return *scheduler_.AddDestination(spec); }
  uint64_t Dispatch(DestinationId id) { return driver_.Dispatch(id); }
  Verdict Complete(DestinationId id, uint64_t sequence, const DeliveryOutcome& outcome) {
    return driver_.Complete(id, sequence, outcome);
  }
  void SendOk(DestinationId id, int n) { driver_.SendOk(id, n); }
  // Offers one delivery to `id` as its head and returns the Scheduler's next decision.
  Decision OfferAndNext(DestinationId id, std::string item_id) {
    WorkItem item;
    item.id = std::move(item_id);
    item.sequence = driver_.next_sequence();
    EXPECT_TRUE(scheduler_.Offer(id, std::move(item)).ok());
    return scheduler_.Next();
  }
  int64_t Limit(DestinationId id, BudgetName name) {
    return scheduler_.EffectiveBudget(id, name)->limit;
  }

  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  SchedulerDriver driver_{clock_, scheduler_};
};

// Verifies that Inspect says when a destination's own key is shared: the users of one LINE
// channel token share it (each drains at its share of the channel), a webhook URL alone does
// not, and a user left alone after the other is removed no longer shares it.
TEST_F(SchedulerAdaptiveTest, InspectSaysWhenADestinationsOwnKeyIsShared) {
  DestinationId user = Add(Spec(Platform::kLine, "U1"));
  EXPECT_FALSE(scheduler_.Inspect(user)->key_shared);
  DestinationId other = Add(Spec(Platform::kLine, "U2"));
  EXPECT_TRUE(scheduler_.Inspect(user)->key_shared);
  EXPECT_TRUE(scheduler_.Inspect(other)->key_shared);
  DestinationId hook = Add(Spec(Platform::kWebhook, "https://example.test/a"));
  EXPECT_FALSE(scheduler_.Inspect(hook)->key_shared);
  ASSERT_TRUE(scheduler_.RemoveDestination(other).ok());
  EXPECT_FALSE(scheduler_.Inspect(user)->key_shared);
}

// Verifies that a LINE 429 without headers halves the channel's pace, parks it for a quarter of
// its window (a first window's 429 teaches only a floor, which slow start climbs from) and shows
// the lowered budget in Inspect.
TEST_F(SchedulerAdaptiveTest, HeaderlessThrottleLowersOwnKey) {
  DestinationId user = Add(Spec(Platform::kLine, "U1"));
  DestinationId other = Add(Spec(Platform::kLine, "U2"));
  EXPECT_FALSE(scheduler_.Inspect(user)->adaptive.has_value());
  const uint64_t sent = Dispatch(user);
  Verdict verdict = Complete(user, sent, Http(429));
  EXPECT_EQ(verdict.kind, VerdictKind::kDefer);
  EXPECT_FALSE(verdict.consumes_attempt);
  EXPECT_EQ(verdict.next_attempt, clock_.Now() + milliseconds(250));
  EXPECT_EQ(Limit(user, BudgetName::kLineChannel), 1000);
  // The channel is one key: every user of it slows down, and waits for the park.
  EXPECT_EQ(Limit(other, BudgetName::kLineChannel), 1000);
  EXPECT_EQ(scheduler_.Inspect(other)->adaptive, (Budget{1000, 1000, 1}));
  Decision wait = OfferAndNext(other, "x");
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(wait.wake_at, clock_.Now() + milliseconds(250));
  EXPECT_EQ(scheduler_.Inspect(other)->deferral.ToString(), "retry_after");
}

// Verifies that 429s of requests sent before the park lower the pace only once.
TEST_F(SchedulerAdaptiveTest, InFlightThrottlesCountOnce) {
  DestinationId user = Add(Spec(Platform::kLine, "U1"));
  // One accepted request first: the startup window then lets two go before any answer.
  Complete(user, Dispatch(user), Http(200));
  clock_.Advance(milliseconds(1));
  WorkItem first;
  first.id = "a";
  first.sequence = driver_.next_sequence();
  ASSERT_TRUE(scheduler_.Offer(user, std::move(first)).ok());
  Decision a = scheduler_.Next();
  WorkItem second;
  second.id = "b";
  second.sequence = driver_.next_sequence();
  ASSERT_TRUE(scheduler_.Offer(user, std::move(second)).ok());
  clock_.Advance(milliseconds(1));
  Decision b = scheduler_.Next();
  ASSERT_EQ(a.kind, Decision::Kind::kDispatch);
  ASSERT_EQ(b.kind, Decision::Kind::kDispatch);
  Verdict va = Complete(user, a.sequence, Http(429));
  clock_.Advance(milliseconds(30));
  Verdict vb = Complete(user, b.sequence, Http(429));
  EXPECT_EQ(Limit(user, BudgetName::kLineChannel), 1);  // the first window's one delivery
  // The second waits for the same park, not a longer one.
  EXPECT_EQ(vb.next_attempt, va.next_attempt);
}

// Verifies that a raised adaptive limit applies at once: slow start's step from 1/s to 4/s repays
// the meter's debt at the new pace, so the next request goes a quarter of a second after the
// last, not the second its charge at 1/s owed, also when that head already waits on its own
// timer (a channel of one destination has no wait list).
TEST_F(SchedulerAdaptiveTest, ARaisedLimitRepacesTheMeterAtOnce) {
  DestinationId user = Add(Spec(Platform::kLine, "U1"));
  Complete(user, Dispatch(user), Http(200));
  clock_.Advance(milliseconds(10));
  Complete(user, Dispatch(user), Http(429));  // the first window's floor: 1/s
  ASSERT_EQ(Limit(user, BudgetName::kLineChannel), 1);
  const uint64_t sent = Dispatch(user);  // after the park
  const SteadyTime dispatched = clock_.Now();
  Decision waiting = OfferAndNext(user, "next");
  ASSERT_EQ(waiting.kind, Decision::Kind::kWait);
  ASSERT_EQ(waiting.wake_at, dispatched + milliseconds(1000));  // on its timer, at 1/s
  Complete(user, sent, Http(200));
  ASSERT_EQ(Limit(user, BudgetName::kLineChannel), 4);
  Decision next = scheduler_.Next();
  ASSERT_EQ(next.kind, Decision::Kind::kWait);
  EXPECT_EQ(next.wake_at, dispatched + milliseconds(250));
}

// A webhook whose probe from 25/s to 37/s failed: back at 25/s, parked one emission interval
// (40 ms), its other 429s held off for a window behind canaries. Returns when it failed.
SteadyTime FailProbe(SchedulerDriver& driver, FakeClock& clock, DestinationId hook) {
  driver.Complete(hook, driver.Dispatch(hook), HttpOutcome(429));
  driver.SendOk(hook, 25);
  Verdict failed = driver.Complete(hook, driver.Dispatch(hook), HttpOutcome(429));
  EXPECT_EQ(failed.next_attempt, clock.Now() + milliseconds(40));  // 1000 / 25
  return clock.Now();
}

// Verifies the canary of a failed probe's hold: the 429 that failed the probe goes again after
// its park (one emission interval of the level that held), the next request goes alone and the
// key parks behind it for about its answer's time (at first max(1/32 window, an emission
// interval): 40 ms); refused, the next canary waits that step and parks twice the last round
// trip; delivered, the rest go when its park ends, until a 429 closes the gate again. Waiting
// out the hold had stalled a channel for a window on every failed probe.
TEST_F(SchedulerAdaptiveTest, AFailedProbesHoldSendsACanaryFirst) {
  DestinationId hook = Add(Spec(Platform::kWebhook, "https://a.example/hook"));
  const SteadyTime t = FailProbe(driver_, clock_, hook);
  ASSERT_EQ(Limit(hook, BudgetName::kWebhookDestination), 25);

  const uint64_t canary = Dispatch(hook);
  EXPECT_EQ(clock_.Now(), t + milliseconds(40));
  Decision behind = OfferAndNext(hook, "behind");
  ASSERT_EQ(behind.kind, Decision::Kind::kWait);
  EXPECT_EQ(behind.wake_at, t + milliseconds(80));
  // Parked behind the canary (the level's pace alone gives the same time, but waits on it as
  // "budget").
  EXPECT_EQ(scheduler_.Inspect(hook)->deferral.ToString(), "retry_after");

  clock_.Advance(milliseconds(30));
  Verdict refused = Complete(hook, canary, Http(429));
  EXPECT_EQ(refused.next_attempt, t + milliseconds(110));
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 25);  // held off: no decrease
  clock_.Advance(milliseconds(10));
  Decision next = scheduler_.Next();
  ASSERT_EQ(next.kind, Decision::Kind::kWait);
  EXPECT_EQ(next.wake_at, t + milliseconds(110));  // the next canary's time
  clock_.Advance(milliseconds(30));
  next = scheduler_.Next();
  ASSERT_EQ(next.kind, Decision::Kind::kDispatch);  // "behind" is the second canary
  Decision third = OfferAndNext(hook, "third");
  ASSERT_EQ(third.kind, Decision::Kind::kWait);
  // Twice the first canary's 30 ms round trip; at 25/s alone it could go at 150 ms.
  EXPECT_EQ(third.wake_at, t + milliseconds(170));

  clock_.Advance(milliseconds(20));
  Complete(hook, next.sequence, Http(200));
  next = scheduler_.Next();  // the gate is open; the park ends as it was set
  ASSERT_EQ(next.kind, Decision::Kind::kWait);
  EXPECT_EQ(next.wake_at, t + milliseconds(170));
  clock_.Advance(milliseconds(40));
  EXPECT_EQ(scheduler_.Next().kind, Decision::Kind::kDispatch);
  // A 429 held off after that: the room is spent again, and the gate closes for a first step.
  Verdict late = Complete(hook, Dispatch(hook), Http(429));
  EXPECT_EQ(late.next_attempt, clock_.Now() + milliseconds(40));
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 25);
}

// Verifies that a canary parks only its own key, the leaf its pace belongs to, not a wider scope
// that a Retry-After parks: on a profile platform whose app scope takes Retry-After (as Slack's
// workspace does), a canary on one conversation leaves another of the same app free to go.
TEST(SchedulerAdaptiveCanaryTest, ACanaryParksItsOwnKeyNotTheRetryAfterScope) {
  const Platform chat = *RegisterPlatform("test_canary_chat");
  const BudgetName app = *RegisterBudgetName("test_canary_chat_app");
  const BudgetName conversation = *RegisterBudgetName("test_canary_chat_conversation");
  SchedulerOptions options;
  PlatformScopes& scopes = options.scopes[PlatformIndex(chat)];
  scopes.rules.push_back({.budget = app, .key = {ScopeKeyPart::kCredential}, .park = true});
  scopes.rules.push_back(
      {.budget = conversation, .key = {ScopeKeyPart::kCredential, ScopeKeyPart::kDestination}});
  FakeClock clock;
  MemoryBudgetStore store;
  FakeRandom random;
  Scheduler scheduler(clock, store, random, options);
  SchedulerDriver driver(clock, scheduler);
  ASSERT_TRUE(scheduler.SetDefaultBudget(BudgetName::kTenantEgress, {1000, 1000, 1000}).ok());
  ASSERT_TRUE(scheduler.SetDefaultBudget(app, {1000, 1000, 1000}).ok());
  ASSERT_TRUE(scheduler.SetDefaultBudget(conversation, {50, 1000, 1}).ok());
  const DestinationId a = *scheduler.AddDestination(AcmeSpec(chat, "conv-a", "bot-1"));
  const DestinationId b = *scheduler.AddDestination(AcmeSpec(chat, "conv-b", "bot-1"));
  const SteadyTime t = FailProbe(driver, clock, a);
  ASSERT_EQ(scheduler.EffectiveBudget(a, conversation)->limit, 25);

  const uint64_t canary = driver.Dispatch(a);
  ASSERT_EQ(clock.Now(), t + milliseconds(40));
  const auto offer_and_next = [&](DestinationId id, std::string item_id) {
    WorkItem item;
    item.id = std::move(item_id);
    item.sequence = driver.next_sequence();
    EXPECT_TRUE(scheduler.Offer(id, std::move(item)).ok());
    return scheduler.Next();
  };
  Decision behind = offer_and_next(a, "behind");
  ASSERT_EQ(behind.kind, Decision::Kind::kWait);
  EXPECT_EQ(behind.wake_at, t + milliseconds(80));  // behind its canary
  Decision free = offer_and_next(b, "other");
  ASSERT_EQ(free.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(free.destination.value, b.value);
  driver.Complete(a, canary, HttpOutcome(200));
}

// Verifies that a canary whose answer says nothing about the rate (a 503), or that carries
// headers that pace the key themselves, lets the next request be the canary: its 429 then
// closes the gate for a step (a held-off 429 with no canary out would go at once).
TEST_F(SchedulerAdaptiveTest, ACanaryAnsweredWithoutARateLetsTheNextBeTheCanary) {
  DestinationId hook = Add(Spec(Platform::kWebhook, "https://a.example/hook"));
  FailProbe(driver_, clock_, hook);
  Complete(hook, Dispatch(hook), Http(503));
  Verdict second = Complete(hook, Dispatch(hook), Http(429));
  EXPECT_EQ(second.next_attempt, clock_.Now() + milliseconds(40));

  DestinationId other = Add(Spec(Platform::kWebhook, "https://b.example/hook"));
  FailProbe(driver_, clock_, other);
  DeliveryOutcome stated = Http(429);
  stated.retry_after = milliseconds(5);
  Complete(other, Dispatch(other), stated);
  Verdict after = Complete(other, Dispatch(other), Http(429));
  EXPECT_EQ(after.next_attempt, clock_.Now() + milliseconds(40));
}

// Verifies recovery: after a window of deliveries the pace grows half way back to the level that
// had, and at the configured limit the key is configured again (operator overrides apply).
TEST_F(SchedulerAdaptiveTest, RecoversAdditivelyAndCapsAtConfigured) {
  DestinationId hook = Add(Spec(Platform::kWebhook, "https://a.example/hook"));
  Complete(hook, Dispatch(hook), Http(429));
  ASSERT_EQ(Limit(hook, BudgetName::kWebhookDestination), 25);
  SendOk(hook, 24);
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 25);
  SendOk(hook, 1);
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 37);  // half way back to 50
  for (int i = 0; i < 40 && scheduler_.Inspect(hook)->adaptive.has_value(); ++i) {
    SendOk(hook, static_cast<int>(Limit(hook, BudgetName::kWebhookDestination)));
  }
  EXPECT_FALSE(scheduler_.Inspect(hook)->adaptive.has_value());
  EXPECT_EQ(*scheduler_.EffectiveBudget(hook, BudgetName::kWebhookDestination),
            (Budget{50, 1000, 1}));
  SendOk(hook, 200);
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 50);
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("acme", {{BudgetName::kWebhookDestination, {80, 1000, 1}}}).ok());
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 80);
}

// Verifies that a lowered pace follows an operator override as its new ceiling.
TEST_F(SchedulerAdaptiveTest, OverrideBecomesCeiling) {
  DestinationId hook = Add(Spec(Platform::kWebhook, "https://a.example/hook"));
  Complete(hook, Dispatch(hook), Http(429));
  ASSERT_TRUE(
      scheduler_.SetTenantBudgets("acme", {{BudgetName::kWebhookDestination, {10, 1000, 1}}}).ok());
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 10);
  EXPECT_FALSE(scheduler_.Inspect(hook)->adaptive.has_value());
}

// Verifies that a 429 with usable headers (Retry-After, or rate-limit headers observed just
// before) parks as the headers say and leaves the pace alone.
TEST_F(SchedulerAdaptiveTest, HeadersPresentMeansNoAdaptivePace) {
  DestinationId hook = Add(Spec(Platform::kWebhook, "https://a.example/hook"));
  DeliveryOutcome with_retry_after = Http(429);
  with_retry_after.retry_after = milliseconds(3000);
  Verdict verdict = Complete(hook, Dispatch(hook), with_retry_after);
  EXPECT_EQ(verdict.next_attempt, clock_.Now() + milliseconds(3000));
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 50);
  clock_.Advance(milliseconds(3000));

  const uint64_t sent = Dispatch(hook);
  RateLimitObservation observation;
  observation.remaining = 3;
  ASSERT_TRUE(scheduler_.Observe(hook, observation).ok());
  Complete(hook, sent, Http(429));
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 50);
  EXPECT_FALSE(scheduler_.Inspect(hook)->adaptive.has_value());
  clock_.Advance(milliseconds(1000));

  // The headers count for one response only: the next bare 429 adapts.
  Complete(hook, Dispatch(hook), Http(429));
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 25);
}

// Verifies that a limit learned from headers ends the adaptive pace of that key.
TEST_F(SchedulerAdaptiveTest, LearnedLimitEndsAdaptivePace) {
  DestinationId hook = Add(Spec(Platform::kWebhook, "https://a.example/hook"));
  Complete(hook, Dispatch(hook), Http(429));
  ASSERT_TRUE(scheduler_.Inspect(hook)->adaptive.has_value());
  RateLimitObservation observation;
  observation.limit = 40;
  ASSERT_TRUE(scheduler_.Observe(hook, observation).ok());
  EXPECT_FALSE(scheduler_.Inspect(hook)->adaptive.has_value());
  EXPECT_EQ(Limit(hook, BudgetName::kWebhookDestination), 40);
}

// Verifies that a key released by its last destination forgets its lowered pace.
TEST_F(SchedulerAdaptiveTest, RemovedKeyForgetsPace) {
  DestinationId user = Add(Spec(Platform::kLine, "U1"));
  Complete(user, Dispatch(user), Http(429));
  ASSERT_TRUE(scheduler_.RemoveDestination(user).ok());
  DestinationId again = Add(Spec(Platform::kLine, "U1"));
  EXPECT_EQ(Limit(again, BudgetName::kLineChannel), 2000);
  EXPECT_FALSE(scheduler_.Inspect(again)->adaptive.has_value());
}

// A LINE channel configured at 2,000/s whose real limit is lower, modelled by a GCRA meter that
// answers 429 (without headers) when it is spent; responses take `latency`. Destinations are
// users of the channel, each with its own store of pending deliveries, offered as the service
// does (the earliest pending one not in flight).
class LineChannelSimulation {
 public:
  LineChannelSimulation(Budget real_limit, int users, Millis latency)
      : scheduler_(clock_, store_, random_, SchedulerOptions{}),
        real_(GcraParams::FromBudget(real_limit)),
        latency_(latency) {
    for (int u = 0; u < users; ++u) {
      users_.push_back(
          {*scheduler_.AddDestination(Spec(Platform::kLine, "U" + std::to_string(u))), {}, 0});
    }
  }

  void Enqueue(int per_user) {
    for (User& user : users_) {
      for (int i = 0; i < per_user; ++i) {
        user.pending[next_sequence_++] = SteadyTime{};
      }
      OfferHead(user);
    }
  }

  // Runs until every delivery is delivered or `limit` simulated time has passed.
  void Run(Millis limit) {
    const SteadyTime end = clock_.Now() + limit;
    while (clock_.Now() < end) {
      CompleteDue();
      Decision decision = scheduler_.Next();
      if (decision.kind == Decision::Kind::kDispatch) {
        Send(decision);
        continue;
      }
      SteadyTime next = end;
      if (decision.kind == Decision::Kind::kWait) {
        next = std::min(next, decision.wake_at);
      }
      if (!responses_.empty()) {
        next = std::min(next, responses_.top().at);
      }
      if (decision.kind == Decision::Kind::kIdle && responses_.empty()) {
        return;
      }
      clock_.Advance(std::max(next - clock_.Now(), SteadyTime::duration(1)));
    }
  }

  int delivered() const { return delivered_; }
  int throttled() const { return throttled_; }
  Millis elapsed() const { return std::chrono::duration_cast<Millis>(clock_.Now() - start_); }
  std::optional<Budget> adaptive() const { return scheduler_.Inspect(users_[0].id)->adaptive; }

 private:
  struct User {
    DestinationId id;
    std::map<uint64_t, SteadyTime> pending;  // sequence → not before; not in flight
    uint64_t offered = 0;                    // the head the scheduler holds, 0 for none
  };
  struct Response {
    SteadyTime at;
    size_t user;
    uint64_t sequence;
    bool accepted;
    bool operator>(const Response& other) const { return at > other.at; }
  };

  void OfferHead(User& user) {
    if (user.pending.empty()) {
      return;
    }
    const auto& [sequence, not_before] = *user.pending.begin();
    if (user.offered != 0 && user.offered <= sequence) {
      return;
    }
    WorkItem item;
    item.id = "d" + std::to_string(sequence);
    item.sequence = sequence;
    item.not_before = not_before;
    ASSERT_TRUE(scheduler_.Offer(user.id, std::move(item)).ok());
    user.offered = sequence;
  }

  void Send(const Decision& decision) {
    const size_t u = decision.destination.value - users_.front().id.value;
    User& user = users_[u];
    user.pending.erase(decision.sequence);
    user.offered = 0;
    const GcraDecision real = GcraEvaluate(real_tat_ns_, real_, 1, ToNanos(clock_.Now()));
    if (real.allowed) {
      real_tat_ns_ = real.tat_ns;
    }
    responses_.push({clock_.Now() + latency_, u, decision.sequence, real.allowed});
    OfferHead(user);
  }

  void CompleteDue() {
    while (!responses_.empty() && responses_.top().at <= clock_.Now()) {
      const Response response = responses_.top();
      responses_.pop();
      User& user = users_[response.user];
      ASSERT_TRUE(scheduler_.Observe(user.id, RateLimitObservation{}).ok());
      Result<Verdict> verdict = scheduler_.OnOutcome(
          user.id, response.sequence, Http(response.accepted ? 200 : 429), {0, clock_.WallNow()});
      ASSERT_TRUE(verdict.has_value());
      if (verdict->kind == VerdictKind::kDelivered) {
        ++delivered_;
        continue;
      }
      ++throttled_;
      user.pending[response.sequence] = verdict->next_attempt;
      if (user.offered > response.sequence) {
        user.offered = 0;  // the earlier delivery replaces the held head
      }
      OfferHead(user);
    }
  }

  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_{0x9e3779b97f4a7c15ULL};
  Scheduler scheduler_;
  GcraParams real_;
  int64_t real_tat_ns_ = 0;
  Millis latency_;
  SteadyTime start_ = clock_.Now();
  std::vector<User> users_;
  uint64_t next_sequence_ = 1;
  std::priority_queue<Response, std::vector<Response>, std::greater<>> responses_;
  int delivered_ = 0;
  int throttled_ = 0;
};

// Verifies the promise: a limit lower than the profile's costs a handful of 429s, not
// one per message. 2,000/s configured, 100/s real, 5,000 deliveries to 4 users of the channel
// (up to 16 in flight), 5 ms latency.
TEST(SchedulerAdaptiveSimulationTest, LowRealLimitCostsAHandfulOf429s) {
  LineChannelSimulation sim(Budget{100, 1000, 1}, 4, milliseconds(5));
  sim.Enqueue(1250);
  sim.Run(milliseconds(600'000));
  EXPECT_EQ(sim.delivered(), 5000);
  EXPECT_LE(sim.throttled(), 20);
  // 5,000 at 100/s take 50 s; the pace stays within a factor 1.5 of the real limit.
  EXPECT_LT(sim.elapsed(), milliseconds(75'000));
}

// Verifies the same with deeper pipelining (10 users, 20 ms: up to 40 requests in flight when
// the first 429 comes back): what is in flight then is lost once, the cohort estimate takes the
// pace down in few steps, and the steady state costs few 429s.
TEST(SchedulerAdaptiveSimulationTest, DeepPipelineCostsAboutWhatIsInFlight) {
  LineChannelSimulation sim(Budget{100, 1000, 1}, 10, milliseconds(20));
  sim.Enqueue(500);
  sim.Run(milliseconds(600'000));
  EXPECT_EQ(sim.delivered(), 5000);
  EXPECT_LE(sim.throttled(), 45);
  EXPECT_LT(sim.elapsed(), milliseconds(75'000));
}

// Verifies that with no lower real limit nothing is throttled and the pace stays configured.
TEST(SchedulerAdaptiveSimulationTest, NoThrottleKeepsConfiguredPace) {
  LineChannelSimulation sim(Budget{4000, 1000, 1}, 10, milliseconds(2));
  sim.Enqueue(500);
  sim.Run(milliseconds(60'000));
  EXPECT_EQ(sim.delivered(), 5000);
  EXPECT_EQ(sim.throttled(), 0);
  EXPECT_FALSE(sim.adaptive().has_value());
}

}  // namespace
}  // namespace egress::pacing
