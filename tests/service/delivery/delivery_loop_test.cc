// DeliveryLoop on its own: a real loop, Scheduler and webhook adapter over a FakeClock, an
// in-memory QueueStore and a scripted transport. Store calls run on the loop's own executor, so
// the test runs the io_context until nothing is ready and every step is decided by the test.

#include "dispatcher/service/delivery/delivery_loop.h"

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/adapter_registry.h"
#include "dispatcher/pacing/memory_budget_store.h"
#include "storage/delivery_id.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"
#include "tests/support/memory_queue_store.h"
#include "tests/support/scripted_transport.h"

namespace egress::service {
namespace {

using storage::Delivery;
using storage::DeliveryState;

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kHook[] = "http://127.0.0.1:9/hook";
constexpr size_t kWebhook = static_cast<size_t>(Platform::kWebhook);

class DeliveryLoopTest : public ::testing::Test {
 protected:
  DeliveryLoopTest() : transport_(io_), registry_(adapters::PlatformEndpoints{}) {
    credentials_.Put("acme", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}});
    // A transient failure waits a fixed 3 s (no jitter to script).
    scheduler_options_.retry[kWebhook].schedule = {Millis(3000)};
  }

  ~DeliveryLoopTest() override { StopLoop(); }

  // Builds the Scheduler and the loop (as a service start does) and runs until idle.
  void StartLoop(DeliveryLoop::Options options = {}) {
    scheduler_ = std::make_unique<pacing::Scheduler>(clock_, budgets_, random_, scheduler_options_);
    for (const auto& [name, budget] : budget_defaults_) {
      ASSERT_TRUE(scheduler_->SetDefaultBudget(name, budget).ok());
    }
    loop_ = std::make_unique<DeliveryLoop>(
        io_, io_.get_executor(), store_, *scheduler_, transport_,
        [this](std::string_view p) { return registry_.Find(p); }, credentials_, clock_, metrics_,
        options);
    loop_->Start();
    RunUntilIdle();
  }

  // Drains the loop (every attempt answered, every outcome written) and destroys it with its
  // Scheduler, as a service stop does; the store stays.
  void StopLoop() {
    if (loop_ == nullptr) {
      return;
    }
    bool drained = false;
    loop_->Drain([&] { drained = true; });
    RunUntilIdle();
    EXPECT_TRUE(drained);
    loop_.reset();
    scheduler_.reset();
  }

  void RunUntilIdle() {
    io_.restart();
    while (io_.poll() > 0) {
    }
  }

  // Moves the fake clock and has the loop look at its waiting work, as its timer would.
  void Advance(Millis d) {
    clock_.Advance(d);
    loop_->WakeForTest();
    RunUntilIdle();
  }

  int64_t NowMs() const { return ToUnixMillis(clock_.WallNow()); }

  // What WalkDeferrals visits, walked one destination a call.
  struct Deferral {
    std::string tenant, platform;
    int64_t ms = 0;
  };
  std::vector<Deferral> WalkDeferrals() {
    std::vector<Deferral> out;
    std::optional<DestinationPosition> at;
    do {
      at = loop_->WalkDeferrals(
          at, 1, [&](const std::string& tenant, std::string_view platform, int64_t ms) {
            out.push_back({tenant, std::string(platform), ms});
          });
    } while (at);
    return out;
  }

  std::string Enqueue(int n, const std::string& destination = kHook) {
    storage::NewDelivery d{.tenant = "acme",
                           .platform = "webhook",
                           .destination = destination,
                           .credential = "hooks",
                           .payload = R"({"n":)" + std::to_string(n) + "}"};
    auto r = store_.Enqueue(d, NowMs());
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? r->id : std::string();
  }

  // Enqueues and tells the running loop, as intake does.
  std::string EnqueueAndNotify(int n) {
    const std::string id = Enqueue(n);
    loop_->Notify(Stored(id));
    RunUntilIdle();
    return id;
  }

  Delivery Stored(const std::string& id) {
    auto d = store_.Get(id);
    EXPECT_TRUE(d.has_value()) << d.error().ToString();
    return d ? *d : Delivery{};
  }

  std::vector<std::string> SentBodies() const {
    std::vector<std::string> bodies;
    for (const adapters::HttpRequest& r : transport_.requests()) {
      bodies.push_back(r.body);
    }
    return bodies;
  }

  double Outcomes(std::string_view outcome) const {
    return metrics_.Value(CounterId::kDeliveries,
                          {{"platform", "webhook"}, {"outcome", outcome}, {"priority", "normal"}});
  }

  FakeClock clock_;
  FakeRandom random_;
  pacing::MemoryBudgetStore budgets_;
  pacing::SchedulerOptions scheduler_options_;
  std::vector<std::pair<pacing::BudgetName, pacing::Budget>> budget_defaults_;
  boost::asio::io_context io_;
  storage::MemoryQueueStore store_;
  adapters::ScriptedTransport transport_;
  adapters::AdapterRegistry registry_;
  CredentialBook credentials_;
  Metrics metrics_;
  std::unique_ptr<pacing::Scheduler> scheduler_;
  std::unique_ptr<DeliveryLoop> loop_;
};

// Verifies that a request whose key's last send left late is held until it reaches the receiver
// an interval after that one (Scheduler::DepartAt): B's first request waits 15 ms for the
// origin's one connection, so B's second, let go by its 50/s meter 5 ms after the first left,
// leaves 15 ms later, and is counted held.
TEST_F(DeliveryLoopTest, ARequestAfterALateOneIsHeldAnIntervalFromIt) {
  scheduler_options_.connections = {.per_origin = 1, .ahead = 1, .reserve = 0};
  budget_defaults_ = {{pacing::BudgetName::kTenantEgress, {1000, 1000, 1000}}};
  Enqueue(1, "http://127.0.0.1:9/a");
  Enqueue(2, "http://127.0.0.1:9/b");
  Enqueue(3, "http://127.0.0.1:9/b");
  transport_.Hold(true);
  StartLoop();
  ASSERT_EQ(transport_.requests().size(), 1u);  // b's first waits for the connection
  Advance(Millis(15));
  transport_.Release();
  RunUntilIdle();
  ASSERT_EQ(transport_.requests().size(), 2u);  // b's first left 15 ms late
  EXPECT_EQ(transport_.requests()[1].body, R"({"n":2})");
  transport_.Release();
  RunUntilIdle();
  Advance(Millis(5));  // b's meter lets its second go 20 ms after its first was let go
  EXPECT_EQ(transport_.requests().size(), 2u);
  EXPECT_EQ(metrics_.Value(CounterId::kSendsHeld, {{"platform", "webhook"}}), 1);
  Advance(Millis(14));
  EXPECT_EQ(transport_.requests().size(), 2u);
  Advance(Millis(1));  // 20 ms after b's first left
  ASSERT_EQ(transport_.requests().size(), 3u);
  EXPECT_EQ(transport_.requests()[2].body, R"({"n":3})");
  transport_.Hold(false);
  transport_.Release();
  RunUntilIdle();
  EXPECT_EQ(Outcomes("delivered"), 3);
}

// Verifies that a 2xx answer is written as delivered, with the attempt in the history.
TEST_F(DeliveryLoopTest, SuccessIsDelivered) {
  const std::string id = Enqueue(1);
  StartLoop();
  ASSERT_EQ(transport_.requests().size(), 1u);
  EXPECT_EQ(transport_.requests()[0].url, kHook);
  EXPECT_EQ(transport_.requests()[0].body, R"({"n":1})");
  const Delivery d = Stored(id);
  EXPECT_EQ(d.state, DeliveryState::kDelivered);
  ASSERT_EQ(d.history.size(), 1u);
  EXPECT_EQ(d.history[0].http_status, 200);
  EXPECT_EQ(Outcomes("delivered"), 1);
  EXPECT_EQ(loop_->in_flight(), 0u);
}

// Verifies what a scrape reads from the loop: each dispatch counts its cost against every budget
// on the destination's path, responses are counted by code class (429 apart), and a deferred
// delivery the loop holds is its (tenant, platform)'s oldest deferral.
TEST_F(DeliveryLoopTest, CountsBudgetUnitsResponsesAndOldestDeferral) {
  Enqueue(1);
  transport_.PushStatus(200);
  transport_.PushStatus(429, {{"Retry-After", "30"}});
  StartLoop();
  const std::string second = EnqueueAndNotify(2);
  Advance(Millis(1000));  // past any pacing wait of the destination's budget
  const Delivery deferred = Stored(second);
  ASSERT_EQ(deferred.state, DeliveryState::kDeferred);
  auto totals = loop_->budget_use().Totals();
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].tenant, "acme");
  EXPECT_EQ(totals[0].budget, pacing::BudgetName::kTenantEgress);
  EXPECT_EQ(totals[0].units, 2u);
  EXPECT_EQ(totals[1].budget, pacing::BudgetName::kWebhookDestination);
  EXPECT_EQ(totals[1].units, 2u);
  auto ratios = loop_->budget_use().Utilization(clock_.Now());
  ASSERT_EQ(ratios.size(), 2u);
  EXPECT_GT(ratios[0].ratio, 0);
  EXPECT_EQ(metrics_.Value(CounterId::kPlatformResponses,
                           {{"platform", "webhook"}, {"code_class", "2xx"}}),
            1);
  EXPECT_EQ(metrics_.Value(CounterId::kPlatformResponses,
                           {{"platform", "webhook"}, {"code_class", "429"}}),
            1);
  EXPECT_EQ(metrics_.Value(CounterId::kPlatformResponses,
                           {{"platform", "webhook"}, {"code_class", "4xx"}}),
            0);
  std::vector<Deferral> oldest = WalkDeferrals();
  ASSERT_EQ(oldest.size(), 1u);
  EXPECT_EQ(oldest[0].tenant, "acme");
  EXPECT_EQ(oldest[0].platform, "webhook");
  EXPECT_EQ(oldest[0].ms, deferred.updated_ms);
  Advance(Millis(31'000));  // sent again and delivered: nothing deferred is held
  EXPECT_TRUE(WalkDeferrals().empty());
  EXPECT_EQ(loop_->budget_use().Totals()[0].units, 3u);
}

// Verifies relay_egress_budget_near_limit_total: units taken from a scope at 80% or more of its
// budget over the last minute are counted by tenant and budget; a scope far under it counts none.
TEST_F(DeliveryLoopTest, CountsUnitsTakenNearABudgetsLimit) {
  budget_defaults_ = {{pacing::BudgetName::kWebhookDestination, {5, 60'000, 5}}};
  for (int i = 1; i <= 5; ++i) {
    Enqueue(i);
    transport_.PushStatus(200);
  }
  StartLoop();
  for (int second = 0; second < 6; ++second) {
    Advance(Millis(1000));  // the tenant's egress budget lets one go a second
  }
  ASSERT_EQ(transport_.requests().size(), 5u);
  // 5 a minute: the 4th and 5th take it to 80% and 100% of it; tenant egress is far under.
  EXPECT_EQ(metrics_.Value(CounterId::kBudgetNearLimit,
                           {{"tenant", "acme"}, {"budget", "webhook_destination"}}),
            2);
  EXPECT_EQ(metrics_.Value(CounterId::kBudgetNearLimit,
                           {{"tenant", "acme"}, {"budget", "tenant_egress"}}),
            0);
}

// Verifies that a 5xx is retried: deferred with backoff and a due time, one attempt consumed,
// sent again once due and not before.
TEST_F(DeliveryLoopTest, ServerErrorIsRetriedWhenDue) {
  const std::string id = Enqueue(1);
  transport_.PushStatus(500);
  const int64_t t0 = NowMs();
  StartLoop();
  Delivery d = Stored(id);
  EXPECT_EQ(d.state, DeliveryState::kDeferred);
  EXPECT_EQ(d.reason, "backoff");
  EXPECT_EQ(d.next_attempt_ms, t0 + 3000);
  EXPECT_EQ(d.attempts, 1u);
  EXPECT_EQ(Outcomes("deferred"), 1);
  Advance(Millis(2900));
  EXPECT_EQ(transport_.requests().size(), 1u);
  Advance(Millis(100));
  EXPECT_EQ(transport_.requests().size(), 2u);
  d = Stored(id);
  EXPECT_EQ(d.state, DeliveryState::kDelivered);
  EXPECT_EQ(d.history.size(), 2u);
}

// Verifies that a 4xx other than 408/429 is dead with the status as the reason, never retried.
TEST_F(DeliveryLoopTest, ClientErrorIsDead) {
  const std::string id = Enqueue(1);
  transport_.PushStatus(404);
  StartLoop();
  const Delivery d = Stored(id);
  EXPECT_EQ(d.state, DeliveryState::kDead);
  EXPECT_EQ(d.reason, "permanent: http_404");
  EXPECT_EQ(Outcomes("dead"), 1);
  Advance(Millis(60'000));
  EXPECT_EQ(transport_.requests().size(), 1u);
}

// Verifies that a 429 with Retry-After is deferred for that long without consuming an attempt,
// and sent again only after it.
TEST_F(DeliveryLoopTest, TooManyRequestsWithRetryAfterIsDeferred) {
  const std::string id = Enqueue(1);
  transport_.PushStatus(429, {{"Retry-After", "30"}});
  const int64_t t0 = NowMs();
  StartLoop();
  Delivery d = Stored(id);
  EXPECT_EQ(d.state, DeliveryState::kDeferred);
  EXPECT_EQ(d.reason, "retry_after");
  EXPECT_EQ(d.next_attempt_ms, t0 + 30'000);
  EXPECT_EQ(d.attempts, 0u);
  EXPECT_EQ(metrics_.Value(CounterId::kPlatform429, {{"platform", "webhook"}}), 1);
  Advance(Millis(29'000));
  EXPECT_EQ(transport_.requests().size(), 1u);
  Advance(Millis(1'000));
  EXPECT_EQ(transport_.requests().size(), 2u);
  EXPECT_EQ(Stored(id).state, DeliveryState::kDelivered);
}

// Verifies that an id packing in no PackedId form (longer than 15 bytes, not a ULID: none the
// stores make) is offered as a ULID is: the loop knows its offered head by the text it keeps
// (long_offered_), so that head's long pacing wait is written through, and it is sent when its
// budget frees it. (Such ids have no sequence, DeliveryIdSequence, so the Scheduler cannot order
// them across a retry: the store's ids are ULIDs.)
TEST_F(DeliveryLoopTest, IdsOfNoPackedFormAreOfferedAsUlidsAre) {
  budget_defaults_ = {{pacing::BudgetName::kWebhookDestination, {1, 60'000, 1}}};
  store_.PrefixIdsForTest("tenant-made-id-");
  const std::string first = Enqueue(1);
  const std::string second = Enqueue(2);
  ASSERT_GT(first.size(), 15u);  // too long to keep inline
  ASSERT_FALSE(storage::IsDeliveryId(first));
  const int64_t t0 = NowMs();
  StartLoop();
  EXPECT_EQ(Stored(first).state, DeliveryState::kDelivered);
  const Delivery waiting = Stored(second);
  EXPECT_EQ(waiting.state, DeliveryState::kDeferred);
  EXPECT_EQ(waiting.reason, "budget:webhook_destination");
  EXPECT_EQ(waiting.next_attempt_ms, t0 + 60'000);
  Advance(Millis(60'000));
  EXPECT_EQ(Stored(second).state, DeliveryState::kDelivered);
  EXPECT_EQ(SentBodies(), (std::vector<std::string>{R"({"n":1})", R"({"n":2})"}));
}

// Verifies that a head held back by its budget for at least persist_wait is written as deferred
// with the reason and the time the budget frees it, and is sent then.
TEST_F(DeliveryLoopTest, LongPacingWaitIsWrittenThrough) {
  budget_defaults_ = {{pacing::BudgetName::kWebhookDestination, {1, 60'000, 1}}};
  const std::string first = Enqueue(1);
  const std::string second = Enqueue(2);
  const int64_t t0 = NowMs();
  StartLoop();
  EXPECT_EQ(Stored(first).state, DeliveryState::kDelivered);
  Delivery d = Stored(second);
  EXPECT_EQ(d.state, DeliveryState::kDeferred);
  EXPECT_EQ(d.reason, "budget:webhook_destination");
  EXPECT_EQ(d.next_attempt_ms, t0 + 60'000);
  EXPECT_EQ(d.attempts, 0u);
  EXPECT_EQ(metrics_.Value(CounterId::kDeferrals, {{"tenant", "acme"},
                                                   {"platform", "webhook"},
                                                   {"reason", "budget:webhook_destination"}}),
            1);
  Advance(Millis(59'000));
  EXPECT_EQ(transport_.requests().size(), 1u);
  Advance(Millis(1'000));
  EXPECT_EQ(SentBodies(), (std::vector<std::string>{R"({"n":1})", R"({"n":2})"}));
  EXPECT_EQ(Stored(second).state, DeliveryState::kDelivered);
}

// Verifies that a pacing wait shorter than persist_wait is counted but not written.
TEST_F(DeliveryLoopTest, ShortPacingWaitIsOnlyCounted) {
  budget_defaults_ = {{pacing::BudgetName::kWebhookDestination, {1, 2'000, 1}}};
  Enqueue(1);
  const std::string second = Enqueue(2);
  StartLoop();
  const size_t writes = store_.apply_batches();
  Delivery d = Stored(second);
  EXPECT_EQ(d.state, DeliveryState::kQueued);
  EXPECT_TRUE(d.reason.empty());
  EXPECT_EQ(metrics_.Total(CounterId::kDeferrals), 1);
  Advance(Millis(1'000));
  EXPECT_EQ(store_.apply_batches(), writes);
  EXPECT_EQ(transport_.requests().size(), 1u);
  Advance(Millis(1'000));
  EXPECT_EQ(Stored(second).state, DeliveryState::kDelivered);
}

// Verifies that a start pages through a destination with more waiting deliveries than one read
// fetches, sending all in enqueue order, and that a restart halfway resumes in order.
TEST_F(DeliveryLoopTest, RestartPagesThroughEveryWaitingDelivery) {
  budget_defaults_ = {{pacing::BudgetName::kWebhookDestination, {1, 1'000, 1}}};
  std::vector<std::string> ids;
  std::vector<std::string> bodies;
  for (int n = 0; n < 11; ++n) {
    ids.push_back(Enqueue(n));
    bodies.push_back(R"({"n":)" + std::to_string(n) + "}");
  }
  // One in the middle finished earlier: the reads skip it.
  ASSERT_TRUE(store_.Apply(ids[4], {.to = DeliveryState::kCancelled, .at_ms = NowMs()}));
  bodies.erase(bodies.begin() + 4);
  StartLoop({.read_ahead = 3});
  for (int i = 0; i < 3; ++i) {
    Advance(Millis(1'000));
  }
  ASSERT_EQ(transport_.requests().size(), 4u);
  StopLoop();
  const size_t reads_before = store_.pending_for_calls();
  StartLoop({.read_ahead = 3});
  for (int i = 0; i < 10; ++i) {
    Advance(Millis(1'000));
  }
  EXPECT_EQ(SentBodies(), bodies);
  for (const std::string& id : ids) {
    EXPECT_EQ(Stored(id).state,
              id == ids[4] ? DeliveryState::kCancelled : DeliveryState::kDelivered);
  }
  // Six waiting deliveries after the restart, three a read: more than one page.
  EXPECT_GE(store_.pending_for_calls() - reads_before, 3u);
}

// Verifies that an outcome whose write fails is written again after the back-off until it
// lands, that the delivery stays in flight meanwhile and is never sent again, and that the
// destination's next delivery still goes.
TEST_F(DeliveryLoopTest, FailedOutcomeWriteIsRetriedAndNotResent) {
  const std::string id = Enqueue(1);
  store_.FailApplies(
      {.status = Status::IoError("disk gone"), .times = 2, .only_to = DeliveryState::kDelivered});
  StartLoop();
  EXPECT_EQ(transport_.requests().size(), 1u);
  EXPECT_EQ(metrics_.Value(CounterId::kStoreErrors, {{"operation", "outcome"}}), 1);
  EXPECT_EQ(Stored(id).state, DeliveryState::kInFlight);
  EXPECT_EQ(loop_->outcomes_pending(), 1u);
  Advance(Millis(200));  // the second write fails too
  EXPECT_EQ(metrics_.Value(CounterId::kStoreErrors, {{"operation", "outcome"}}), 2);
  EXPECT_EQ(Stored(id).state, DeliveryState::kInFlight);
  Advance(Millis(400));
  EXPECT_EQ(Stored(id).state, DeliveryState::kDelivered);
  EXPECT_EQ(loop_->outcomes_pending(), 0u);
  EXPECT_EQ(transport_.requests().size(), 1u);
  const std::string next = EnqueueAndNotify(2);
  EXPECT_EQ(Stored(next).state, DeliveryState::kDelivered);
  Advance(Millis(60'000));
  EXPECT_EQ(SentBodies(), (std::vector<std::string>{R"({"n":1})", R"({"n":2})"}));
}

// Verifies that a lease that fails for a passing reason sends nothing, pauses dispatching for
// the back-off, and that the delivery is leased and sent once after it.
TEST_F(DeliveryLoopTest, FailedLeaseIsRetriedAfterTheBackOff) {
  const std::string id = Enqueue(1);
  store_.FailApplies({.status = Status::Unavailable("store refuses writes"),
                      .times = 1,
                      .only_to = DeliveryState::kInFlight});
  StartLoop();
  EXPECT_EQ(transport_.requests().size(), 0u);
  EXPECT_EQ(metrics_.Value(CounterId::kStoreErrors, {{"operation", "lease"}}), 1);
  EXPECT_EQ(Stored(id).state, DeliveryState::kQueued);
  Advance(Millis(199));
  EXPECT_EQ(transport_.requests().size(), 0u);
  Advance(Millis(1));
  EXPECT_EQ(transport_.requests().size(), 1u);
  EXPECT_EQ(Stored(id).state, DeliveryState::kDelivered);
}

// Verifies that a failed read is read again after the back-off, without a notification.
TEST_F(DeliveryLoopTest, FailedReadIsReadAgainAfterTheBackOff) {
  const std::string id = Enqueue(1);
  store_.FailPendingFor(Status::Unavailable("busy"));
  StartLoop();
  EXPECT_EQ(transport_.requests().size(), 0u);
  EXPECT_EQ(metrics_.Value(CounterId::kStoreErrors, {{"operation", "read"}}), 1);
  Advance(Millis(200));
  EXPECT_EQ(Stored(id).state, DeliveryState::kDelivered);
}

// Verifies a receiver's bad certificate is retried on the schedule (it is usually fixed within
// hours) and ends dead with tls_rejected only when the schedule runs out.
TEST_F(DeliveryLoopTest, TlsRejectionIsRetriedThenDeadWithItsName) {
  scheduler_options_.retry[kWebhook].max_attempts = 3;
  const std::string id = Enqueue(1);
  for (int i = 0; i < 3; ++i) {
    transport_.Push(Status::Rejected("POST x: SSL peer certificate or SSH remote key was not OK"));
  }
  StartLoop();
  Delivery d = Stored(id);
  EXPECT_EQ(d.state, DeliveryState::kDeferred);
  EXPECT_EQ(d.reason, "backoff");
  ASSERT_EQ(d.history.size(), 1u);
  EXPECT_EQ(d.history[0].platform_error, "tls_rejected");
  Advance(Millis(3000));
  EXPECT_EQ(Stored(id).state, DeliveryState::kDeferred);
  Advance(Millis(3000));
  d = Stored(id);
  EXPECT_EQ(transport_.requests().size(), 3u);
  EXPECT_EQ(d.state, DeliveryState::kDead);
  EXPECT_EQ(d.reason, "tls_rejected");
}

// Verifies server.destination_idle: a destination with nothing left is forgotten once idle for
// the set time (by the loop and the Scheduler), not before; one that holds work is kept; a new
// delivery brings a forgotten one back and it is sent.
TEST_F(DeliveryLoopTest, IdleDestinationIsForgottenAndComesBack) {
  Enqueue(1);
  Enqueue(2, "http://127.0.0.1:9/other");
  transport_.PushStatus(200);
  transport_.PushStatus(500);  // "other" is deferred for 3 s: it holds work
  StartLoop({.destination_idle = Millis(600'000)});
  Advance(Millis(1000));  // the second may wait for the tenant's pace
  ASSERT_EQ(transport_.requests().size(), 2u);
  ASSERT_EQ(loop_->destination_count(), 2u);
  clock_.Advance(Millis(598'000));  // 599 s after the first was delivered
  EXPECT_EQ(loop_->EvictIdle(), 0u);
  clock_.Advance(Millis(1'000));
  // No timer ran (the test moves the clock only): "other" still holds its deferred head, so
  // only the idle one goes.
  EXPECT_EQ(loop_->EvictIdle(), 1u);
  EXPECT_EQ(loop_->destination_count(), 1u);
  EXPECT_EQ(scheduler_->destination_count(), 1u);
  EXPECT_EQ(metrics_.Value(GaugeId::kDestinations), 1);
  const std::string again = EnqueueAndNotify(3);
  EXPECT_EQ(loop_->destination_count(), 2u);
  EXPECT_EQ(Stored(again).state, DeliveryState::kDelivered);
  EXPECT_EQ(transport_.requests().back().url, kHook);
}

// Verifies that nothing is dispatched while the store cannot write, that an outcome which
// failed meanwhile is written as soon as the store can again (not after its back-off), and
// that the waiting work then goes.
TEST_F(DeliveryLoopTest, NothingIsDispatchedWhileTheStoreCannotWrite) {
  const std::string first = Enqueue(1);
  store_.FailApplies({.status = Status::IoError("No space left on device"),
                      .times = 1,
                      .only_to = DeliveryState::kDelivered});
  StartLoop();
  EXPECT_EQ(Stored(first).state, DeliveryState::kInFlight);
  loop_->SetStoreWritable(false);
  const std::string second = EnqueueAndNotify(2);
  Advance(Millis(60'000));  // the outcome's back-off is long over: it waits for the store
  EXPECT_EQ(transport_.requests().size(), 1u);
  EXPECT_EQ(Stored(second).state, DeliveryState::kQueued);
  loop_->SetStoreWritable(true);
  RunUntilIdle();
  EXPECT_EQ(Stored(first).state, DeliveryState::kDelivered);
  EXPECT_EQ(Stored(second).state, DeliveryState::kDelivered);
  EXPECT_EQ(SentBodies(), (std::vector<std::string>{R"({"n":1})", R"({"n":2})"}));
}

// Verifies that a record the store cannot read is moved to dead with reason corrupt_record and
// counted, and that the deliveries around it in its destination are sent in order.
TEST_F(DeliveryLoopTest, CorruptRecordIsDeadAndItsDestinationGoesOn) {
  const std::string first = Enqueue(1);
  const std::string bad = Enqueue(2);
  const std::string third = Enqueue(3);
  store_.CorruptForTest(bad, "delivery record is truncated or has a malformed field");
  StartLoop();
  Advance(Millis(60'000));  // the destination's pacing
  EXPECT_EQ(SentBodies(), (std::vector<std::string>{R"({"n":1})", R"({"n":3})"}));
  const Delivery dead = Stored(bad);
  EXPECT_EQ(dead.state, DeliveryState::kDead);
  EXPECT_EQ(dead.reason, "corrupt_record: delivery record is truncated or has a malformed field");
  EXPECT_EQ(metrics_.Value(CounterId::kCorruptRecords), 1);
  EXPECT_EQ(Stored(first).state, DeliveryState::kDelivered);
  EXPECT_EQ(Stored(third).state, DeliveryState::kDelivered);
}

// Verifies that a delivery whose request cannot be built (a webhook payload that is not JSON)
// is dead with reason invalid_payload after one try at building it, nothing sent, and that its
// destination's next delivery goes.
TEST_F(DeliveryLoopTest, UnbuildableRequestIsDeadWithInvalidPayload) {
  storage::NewDelivery d{.tenant = "acme",
                         .platform = "webhook",
                         .destination = kHook,
                         .credential = "hooks",
                         .payload = "not json"};
  auto bad = store_.Enqueue(d, NowMs());
  ASSERT_TRUE(bad.has_value());
  const std::string good = Enqueue(2);
  StartLoop();
  const Delivery dead = Stored(bad->id);
  EXPECT_EQ(dead.state, DeliveryState::kDead);
  EXPECT_TRUE(dead.reason.starts_with("invalid_payload: ")) << dead.reason;
  Advance(Millis(60'000));  // the destination's pacing
  EXPECT_EQ(Stored(good).state, DeliveryState::kDelivered);
  EXPECT_EQ(SentBodies(), std::vector<std::string>{R"({"n":2})"});
  EXPECT_EQ(Outcomes("dead"), 1);
}

}  // namespace
}  // namespace egress::service
