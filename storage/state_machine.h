#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dispatcher/base/status.h"
#include "storage/delivery.h"

namespace egress::storage {

// One state change of one delivery, applied atomically by QueueStore::Apply.
struct StateChange {
  DeliveryState to = DeliveryState::kQueued;
  int64_t at_ms = 0;  // wall clock of the change (Unix ms)
  // For queued and deferred: when the delivery is due again. Default: at_ms (due now).
  std::optional<int64_t> next_attempt_ms;
  // Why it waits or died (`budget:slack_channel`, `retry_after`, `http_404`, ...). Required for
  // deferred and dead; ignored and cleared for other states.
  std::string reason;
  // The try that led here, appended to the bounded history.
  std::optional<Attempt> attempt;
  // Whether `attempt` counts against the retry limit. Rate-limit waits never do.
  bool consume_attempt = false;
  // Replays start the attempt count again.
  bool reset_attempts = false;
  // For delivered: the units the platform actually took, when the adapter knows them and they
  // differ from the estimate; the delivery's quota charges are corrected to it. Default: unset.
  std::optional<int64_t> actual_cost;
  // When set, the change applies only if the delivery is in this state (compare-and-set);
  // otherwise FailedPrecondition.
  std::optional<DeliveryState> expect;
  // The dispatcher's change of a delivery of a shard it owns (a lease, an outcome, a pacing
  // wait). A store several nodes serve (QueueStore::ownership()) applies it only while this
  // node's lease of the delivery's shard is still the store's, checked in the writing
  // transaction: Rejected once another node took the shard over (a lease it held is dropped),
  // and for a lease Unavailable while this node may not dispatch the shard (shard_ownership.h).
  // A store of one node ignores it. Default: false (an operator's change: applies on any node).
  bool as_owner = false;
};

// OK when `from` may move to `to`; FailedPrecondition naming both states otherwise.
Status CheckTransition(DeliveryState from, DeliveryState to);

// The most bytes (AttemptBytes) a delivery's history keeps: older entries go first, the newest
// always stays. A record thus grows after intake by at most this much (plus the newest attempt),
// which intake's bound of a tenant's stored bytes allows for (docs/api.md, "Storage bounds"):
// without it, 20 attempts of 32 rate-limit headers each grew a 300-byte record to ~200 KiB.
inline constexpr size_t kMaxHistoryBytes = 8 << 10;
// What one history entry takes, as kMaxHistoryBytes counts it: its texts and a fixed 32 bytes.
size_t AttemptBytes(const Attempt& a);

// Applies `change` to `d` after checking it: state, reason, times, attempts, history (keeping
// at most `history_limit` newest entries, of at most kMaxHistoryBytes), and the quota charges: a
// replay (dead -> queued) moves them to the slice of `at_ms`, an actual cost replaces their units.
// Leaves `d` untouched on error.
Status ApplyChange(const StateChange& change, size_t history_limit, Delivery& d);

}  // namespace egress::storage
