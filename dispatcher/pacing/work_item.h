#pragma once

#include <cstdint>
#include <string>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/defer_reason.h"
#include "dispatcher/pacing/priority.h"

namespace egress::pacing {

// The head of a destination's queue as the service hands it to the Scheduler: the delivery that
// should leave next. The store keeps the rest; the Scheduler holds at most one head per
// destination, so its memory grows with destinations that have work, not with queued deliveries.
struct WorkItem {
  // The delivery id (the store's printable id); handed back in the dispatch decision.
  std::string id;
  // Enqueue order within the destination (larger = later). Offering an earlier item replaces
  // the current head.
  uint64_t sequence = 0;
  // Units taken from every scope of the path. Must be in [1, 1'000'000]. Default: 1.
  int64_t cost = 1;
  // Deliveries with the same non-empty ordering key leave in sequence order, one in flight.
  std::string ordering_key;
  // Not before this steady time (the store's next attempt, e.g. after a backoff). Default: now.
  SteadyTime not_before{};
  // Its place among the heads waiting under a scope they share (Priority). Default: normal.
  Priority priority = Priority::kNormal;
  // Shown while `not_before` is in the future: kBackoff, kRetryAfter, ... Default: kScheduled.
  DeferReason wait_reason = DeferReason::kScheduled;
};

}  // namespace egress::pacing
