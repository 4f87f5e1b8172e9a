#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/defer_reason.h"
#include "dispatcher/pacing/retry_policy.h"
#include "dispatcher/pacing/work_item.h"
#include "dispatcher/service/delivery/destination_queue.h"
#include "storage/state_machine.h"

namespace egress::service {

// What the DeliveryLoop hands the Scheduler and the store, computed from what it holds. Pure
// functions: no clock, no I/O, no state; the loop passes its time in. Safe from any thread.

// One instant on both time lines: steady for pacing, wall clock (Unix ms) for what is persisted.
struct LoopTime {
  SteadyTime steady{};
  int64_t wall_ms = 0;
};
inline LoopTime LoopTimeOf(const Clock& clock) {
  return {clock.Now(), ToUnixMillis(clock.WallNow())};
}

// The WorkItem offered to the Scheduler for a destination's head. Its sequence is the id's
// (storage::DeliveryIdSequence). A head deferred for a budget is due at once: its recorded time
// is what the meter foresaw, and the meter decides again (an operator may have raised the budget
// since). Any other head is due at its next_attempt_ms (a Retry-After or backoff time binds:
// nothing else remembers it across a restart), never before `now`; a deferred one shows that
// wait as kBackoff or kRetryAfter.
pacing::WorkItem WorkItemFor(const PendingDelivery& head, LoopTime now);

// The change that persists the verdict on an attempt of an in-flight delivery (a compare-and-set
// on in_flight):
//   delivered -> delivered;
//   dead      -> dead with verdict.dead_reason ("dead" when empty);
//   defer     -> deferred with verdict.deferral.ToString() as the reason, due at
//                now.wall_ms + (verdict.next_attempt - now.steady), never before now.wall_ms.
// The attempt counts against the retry limit when verdict.consumes_attempt. `attempt` is the
// try that led here, for the history; nullopt when nothing was sent.
storage::StateChange StateChangeFor(const pacing::Verdict& verdict, LoopTime now,
                                    std::optional<storage::Attempt> attempt);

// The `outcome` label of relay_egress_deliveries_total: "delivered", "dead" or "deferred".
std::string_view OutcomeLabel(pacing::VerdictKind kind);

// The change that writes a pacing wait of the head through to the store, so its record says why
// it waits: deferred with `reason` (the wait's Deferral::ToString()) and the time the wait ends,
// consuming no attempt, applied only if the head is still in the state the loop read
// (compare-and-set). nullopt when the wait has no end (`until` unset: it waits for an event),
// ends within `persist_wait` (routine pacing), or the head already records it (deferred with the
// same reason and a next attempt within `persist_wait` of the new one).
std::optional<storage::StateChange> PacingWaitChangeFor(const PendingDelivery& head,
                                                        std::optional<SteadyTime> until,
                                                        const std::string& reason, LoopTime now,
                                                        Millis persist_wait);
// The change that records a head held by a pause: deferred with `reason` ("paused"), due at
// once (the pause's end decides when it goes), no attempt consumed, compare-and-set on the state
// read; nullopt when the head records it already, or is deferred until a later time of its own
// (a back-off or a Retry-After, which must outlast the pause: the record keeps that reason).
std::optional<storage::StateChange> PausedChangeFor(const PendingDelivery& head,
                                                    const std::string& reason, LoopTime now);

}  // namespace egress::service
