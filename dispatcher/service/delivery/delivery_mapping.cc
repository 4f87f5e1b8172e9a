#include "dispatcher/service/delivery/delivery_mapping.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "storage/delivery_id.h"

namespace egress::service {

using pacing::DeferReason;
using pacing::DeferReasonString;
using storage::DeliveryState;

namespace {

// A wait a meter set (budget:<name>, bulk_share:<name>): the Scheduler paces it again when it is
// offered, so it is due at once; every other deferral's time binds.
bool MeterWait(const std::string& reason) {
  return reason.starts_with(DeferReasonString(DeferReason::kBudget)) ||
         reason.starts_with(DeferReasonString(DeferReason::kBulkShare));
}

}  // namespace

pacing::WorkItem WorkItemFor(const PendingDelivery& head, LoopTime now) {
  pacing::WorkItem item;
  item.id = head.id;
  item.sequence = storage::DeliveryIdSequence(head.id);
  item.cost = head.cost;
  item.ordering_key = head.ordering_key;
  item.priority = head.priority;
  const bool deferred = head.state == DeliveryState::kDeferred;
  const bool budget_wait = deferred && MeterWait(head.reason);
  const int64_t wait_ms = budget_wait ? 0 : head.next_attempt_ms - now.wall_ms;
  item.not_before = now.steady + Millis(std::max<int64_t>(0, wait_ms));
  if (deferred && !budget_wait) {
    item.wait_reason = head.reason.starts_with(DeferReasonString(DeferReason::kBackoff))
                           ? DeferReason::kBackoff
                           : DeferReason::kRetryAfter;
  }
  return item;
}

storage::StateChange StateChangeFor(const pacing::Verdict& verdict, LoopTime now,
                                    std::optional<storage::Attempt> attempt) {
  storage::StateChange change{.at_ms = now.wall_ms, .attempt = std::move(attempt)};
  change.consume_attempt = verdict.consumes_attempt;
  change.expect = DeliveryState::kInFlight;
  switch (verdict.kind) {
    case pacing::VerdictKind::kDelivered:
      change.to = DeliveryState::kDelivered;
      break;
    case pacing::VerdictKind::kDead:
      change.to = DeliveryState::kDead;
      change.reason = verdict.dead_reason.empty() ? "dead" : verdict.dead_reason;
      break;
    case pacing::VerdictKind::kDefer: {
      change.to = DeliveryState::kDeferred;
      change.reason = verdict.deferral.ToString();
      const auto wait = std::chrono::duration_cast<Millis>(verdict.next_attempt - now.steady);
      change.next_attempt_ms = now.wall_ms + std::max<int64_t>(0, wait.count());
      break;
    }
  }
  return change;
}

std::string_view OutcomeLabel(pacing::VerdictKind kind) {
  switch (kind) {
    case pacing::VerdictKind::kDelivered:
      return "delivered";
    case pacing::VerdictKind::kDead:
      return "dead";
    case pacing::VerdictKind::kDefer:
      return "deferred";
  }
  return "deferred";
}

std::optional<storage::StateChange> PacingWaitChangeFor(const PendingDelivery& head,
                                                        std::optional<SteadyTime> until,
                                                        const std::string& reason, LoopTime now,
                                                        Millis persist_wait) {
  if (!until) {
    return std::nullopt;
  }
  const int64_t wait_ms = std::chrono::duration_cast<Millis>(*until - now.steady).count();
  const int64_t next_ms = now.wall_ms + std::max<int64_t>(0, wait_ms);
  if (wait_ms < persist_wait.count()) {
    return std::nullopt;
  }
  if (head.state == DeliveryState::kDeferred && head.reason == reason &&
      std::abs(head.next_attempt_ms - next_ms) < persist_wait.count()) {
    return std::nullopt;
  }
  // Rate-limit waits consume no attempt. Compare-and-set on the state read: a head leased or
  // cancelled meanwhile is left alone.
  storage::StateChange change{.to = DeliveryState::kDeferred, .at_ms = now.wall_ms};
  change.next_attempt_ms = next_ms;
  change.reason = reason;
  change.expect = head.state;
  return change;
}

std::optional<storage::StateChange> PausedChangeFor(const PendingDelivery& head,
                                                    const std::string& reason, LoopTime now) {
  const bool deferred = head.state == DeliveryState::kDeferred;
  // A time WorkItemFor binds (a back-off, a Retry-After; not a meter's, which is due at once):
  // that wait stands, so the pause must not make it due at once.
  const bool own_time = deferred && head.next_attempt_ms > now.wall_ms && !MeterWait(head.reason);
  if ((deferred && head.reason == reason) || own_time) {
    return std::nullopt;
  }
  // Due at once when the pause ends (its end is the operator's): the record says why it waits.
  storage::StateChange change{.to = DeliveryState::kDeferred, .at_ms = now.wall_ms};
  change.next_attempt_ms = now.wall_ms;
  change.reason = reason;
  change.expect = head.state;
  return change;
}

}  // namespace egress::service
