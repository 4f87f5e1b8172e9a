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

// A destination's store in miniature: deliveries in enqueue order, offered as the service would
// (the earliest unfinished one that is not in flight).
class OrderingHarness {
 public:
  OrderingHarness() : scheduler_(clock_, store_, random_, Options()) {
    DestinationSpec spec;
    spec.tenant = "acme";
    spec.platform = Platform::kWebhook;
    spec.target = "https://a.example/hook";
    dest_ = *scheduler_.AddDestination(spec);
  }

  static SchedulerOptions Options() {
    SchedulerOptions options;
    options.retry[static_cast<size_t>(Platform::kWebhook)].schedule = {milliseconds(2000)};
    return options;
  }

  void Enqueue(std::string ordering_key) {
    pending_.push_back(
        {next_sequence_++, std::move(ordering_key), SteadyTime{}, DeferReason::kScheduled, false});
    OfferHead();
  }

  // Offers the earliest pending delivery not in flight.
  void OfferHead() {
    for (Pending& p : pending_) {
      if (p.in_flight) {
        continue;
      }
      WorkItem item;
      item.id = "d" + std::to_string(p.sequence);
      item.sequence = p.sequence;
      item.ordering_key = p.ordering_key;
      item.not_before = p.not_before;
      item.wait_reason = p.wait_reason;
      Status status = scheduler_.Offer(dest_, std::move(item));
      // kAlreadyExists: the engine holds an earlier head already.
      status.IgnoreError();
      return;
    }
  }

  // Runs the engine until idle; each dispatch is answered by `respond`.
  template <class Respond>
  void Run(Respond respond, int steps) {
    for (int i = 0; i < steps; ++i) {
      Decision decision = scheduler_.Next();
      if (decision.kind == Decision::Kind::kWait) {
        clock_.Advance(decision.wake_at - clock_.Now());
        continue;
      }
      if (decision.kind == Decision::Kind::kIdle) {
        return;
      }
      sent_.push_back(decision.sequence);
      Pending* p = FindPending(decision.sequence);
      p->in_flight = true;
      OfferHead();
      Complete(decision.sequence, respond(decision.sequence));
    }
  }

  void Complete(uint64_t sequence, DeliveryOutcome outcome) {
    if (outcome.http_status == 429) {
      RateLimitObservation observation;
      observation.retry_after = outcome.retry_after;
      EXPECT_TRUE(scheduler_.Observe(dest_, observation).ok());
    }
    Result<Verdict> verdict = scheduler_.OnOutcome(dest_, sequence, outcome, {0, clock_.WallNow()});
    ASSERT_TRUE(verdict.has_value());
    Pending* p = FindPending(sequence);
    if (verdict->kind == VerdictKind::kDefer) {
      p->in_flight = false;
      p->not_before = verdict->next_attempt;
      p->wait_reason = verdict->deferral.reason;
    } else {
      delivered_.push_back(sequence);
      std::erase_if(pending_, [&](const Pending& q) { return q.sequence == sequence; });
    }
    OfferHead();
  }

  std::vector<uint64_t> sent_;
  std::vector<uint64_t> delivered_;
  FakeClock clock_;
  Scheduler& scheduler() { return scheduler_; }
  DestinationId dest() const { return dest_; }

 private:
  struct Pending {
    uint64_t sequence;
    std::string ordering_key;
    SteadyTime not_before;
    DeferReason wait_reason;
    bool in_flight;
  };
  Pending* FindPending(uint64_t sequence) {
    for (Pending& p : pending_) {
      if (p.sequence == sequence) {
        return &p;
      }
    }
    return nullptr;
  }

  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  DestinationId dest_;
  std::vector<Pending> pending_;
  uint64_t next_sequence_ = 1;
};

DeliveryOutcome Http(int status) {
  DeliveryOutcome outcome;
  outcome.http_status = status;
  return outcome;
}

// Verifies that a transient failure of the first delivery of a key holds the ones behind it and
// the key leaves in enqueue order after the retry.
TEST(SchedulerOrderingTest, RetryHoldsLaterDeliveriesOfTheKey) {
  OrderingHarness h;
  for (int i = 0; i < 4; ++i) {
    h.Enqueue("order-42");
  }
  int failures = 0;
  h.Run(
      [&](uint64_t sequence) {
        if (sequence == 2 && failures < 2) {
          ++failures;
          return Http(503);
        }
        return Http(200);
      },
      100);
  EXPECT_EQ(h.delivered_, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(h.sent_, (std::vector<uint64_t>{1, 2, 2, 2, 3, 4}));
}

// Verifies that a 429 parks the key, the head's reason is visible, and order holds afterwards.
TEST(SchedulerOrderingTest, RateLimitDeferralKeepsOrder) {
  OrderingHarness h;
  h.Enqueue("k");
  h.Enqueue("k");
  bool limited = false;
  h.Run(
      [&](uint64_t sequence) {
        if (sequence == 1 && !limited) {
          limited = true;
          DeliveryOutcome outcome = Http(429);
          outcome.retry_after = milliseconds(3000);
          return outcome;
        }
        return Http(200);
      },
      1);
  EXPECT_EQ(h.scheduler().Next().kind, Decision::Kind::kWait);
  Result<DestinationView> view = h.scheduler().Inspect(h.dest());
  EXPECT_TRUE(view->has_head);
  EXPECT_EQ(view->deferral.ToString(), "retry_after");
  const SteadyTime parked_at = h.clock_.Now();
  h.Run([](uint64_t) { return Http(200); }, 100);
  EXPECT_EQ(h.delivered_, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(h.sent_, (std::vector<uint64_t>{1, 1, 2}));
  EXPECT_GE(h.clock_.Now() - parked_at, milliseconds(3000));
}

// Verifies that deliveries of one key are never in flight together, while another key's may be.
TEST(SchedulerOrderingTest, OneInFlightPerKey) {
  OrderingHarness h;
  h.Enqueue("a");
  h.Enqueue("a");
  Decision first = h.scheduler().Next();
  ASSERT_EQ(first.kind, Decision::Kind::kDispatch);
  WorkItem second;
  second.id = "d2";
  second.sequence = 2;
  second.ordering_key = "a";
  ASSERT_TRUE(h.scheduler().Offer(h.dest(), std::move(second)).ok());
  h.clock_.Advance(milliseconds(1000));
  EXPECT_EQ(h.scheduler().Next().kind, Decision::Kind::kIdle);
  EXPECT_EQ(h.scheduler().Inspect(h.dest())->deferral.ToString(), "ordering");
  ASSERT_TRUE(h.scheduler().OnOutcome(h.dest(), 1, Http(200), {}).has_value());
  EXPECT_EQ(h.scheduler().Next().sequence, 2u);
}

}  // namespace
}  // namespace egress::pacing
