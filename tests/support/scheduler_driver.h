#pragma once

#include <string>

#include <gtest/gtest.h>

#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"

namespace egress::pacing {

// A destination of tenant "acme" on `credential`.
inline DestinationSpec AcmeSpec(Platform platform, std::string target,
                                std::string credential = "channel-1") {
  DestinationSpec spec;
  spec.tenant = "acme";
  spec.platform = platform;
  spec.credential = std::move(credential);
  spec.target = std::move(target);
  return spec;
}

// An answer with this HTTP status and nothing else.
inline DeliveryOutcome HttpOutcome(int status) {
  DeliveryOutcome outcome;
  outcome.http_status = status;
  return outcome;
}

// Drives a Scheduler on a FakeClock as the delivery loop does, one delivery at a time: offer
// a head, advance the clock until it is dispatched, report its outcome.
class SchedulerDriver {
 public:
  SchedulerDriver(FakeClock& clock, Scheduler& scheduler) : clock_(clock), scheduler_(scheduler) {}

  // Offers one delivery to `id` and waits (on the fake clock) until it is dispatched; returns
  // its sequence.
  uint64_t Dispatch(DestinationId id) {
    WorkItem item;
    item.id = "d" + std::to_string(++sequence_);
    item.sequence = sequence_;
    EXPECT_TRUE(scheduler_.Offer(id, std::move(item)).ok());
    for (;;) {
      Decision decision = scheduler_.Next();
      if (decision.kind == Decision::Kind::kDispatch) {
        EXPECT_EQ(decision.destination, id);
        return decision.sequence;
      }
      EXPECT_EQ(decision.kind, Decision::Kind::kWait);
      clock_.Advance(decision.wake_at - clock_.Now());
    }
  }
  Verdict Complete(DestinationId id, uint64_t sequence, const DeliveryOutcome& outcome) {
    return *scheduler_.OnOutcome(id, sequence, outcome, {0, clock_.WallNow()});
  }
  // `n` deliveries to `id`, each answered 200.
  void SendOk(DestinationId id, int n) {
    for (int i = 0; i < n; ++i) {
      Complete(id, Dispatch(id), HttpOutcome(200));
    }
  }
  uint64_t next_sequence() { return ++sequence_; }

 private:
  FakeClock& clock_;
  Scheduler& scheduler_;
  uint64_t sequence_ = 0;
};

}  // namespace egress::pacing
