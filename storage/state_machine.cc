#include "storage/state_machine.h"

#include <fmt/format.h>

#include "dispatcher/pacing/sliding_window_counter.h"

namespace egress::storage {
namespace {

using S = DeliveryState;

bool Allowed(S from, S to) {
  switch (from) {
    case S::kQueued:
      return to == S::kInFlight || to == S::kDeferred || to == S::kDead || to == S::kCancelled;
    case S::kInFlight:
      return to == S::kDelivered || to == S::kDeferred || to == S::kDead || to == S::kQueued;
    case S::kDeferred:
      return to == S::kInFlight || to == S::kQueued || to == S::kDeferred || to == S::kDead ||
             to == S::kCancelled;
    case S::kDead:
      return to == S::kQueued;
    case S::kDelivered:
    case S::kCancelled:
      return false;
  }
  return false;
}

}  // namespace

Status CheckTransition(DeliveryState from, DeliveryState to) {
  if (Allowed(from, to)) {
    return Status::Ok();
  }
  return Status::FailedPrecondition(
      fmt::format("illegal transition {} -> {}", StateName(from), StateName(to)));
}

size_t AttemptBytes(const Attempt& a) {
  size_t n = 32 + a.platform_error.size() + a.detail.size();
  for (const auto& [name, value] : a.rate_limit_headers) {
    n += name.size() + value.size();
  }
  return n;
}

Status ApplyChange(const StateChange& change, size_t history_limit, Delivery& d) {
  if (change.expect && *change.expect != d.state) {
    return Status::FailedPrecondition(fmt::format("delivery {} is {}, expected {}", d.id,
                                                  StateName(d.state), StateName(*change.expect)));
  }
  if (Status s = CheckTransition(d.state, change.to); !s.ok()) {
    return Status::FailedPrecondition(fmt::format("delivery {}: {}", d.id, s.message()));
  }
  const bool needs_reason = change.to == S::kDeferred || change.to == S::kDead;
  if (needs_reason && change.reason.empty()) {
    return Status::InvalidArgument(
        fmt::format("delivery {}: moving to {} needs a reason", d.id, StateName(change.to)));
  }
  if (d.state == S::kDead && change.to == S::kQueued) {
    // Refunded when it died: charged again, now.
    for (QuotaCharge& c : d.charges) {
      c.expires_ms = pacing::WindowShape{c.window_ms, c.slice_ms}.ExpiryOf(change.at_ms);
    }
  }
  if (change.to == S::kDelivered && change.actual_cost && *change.actual_cost >= 0) {
    for (QuotaCharge& c : d.charges) {
      c.units = *change.actual_cost;
    }
  }
  d.state = change.to;
  d.updated_ms = change.at_ms;
  d.reason = needs_reason ? change.reason : std::string();
  d.next_attempt_ms = IsWaiting(change.to) ? change.next_attempt_ms.value_or(change.at_ms) : 0;
  d.finished_ms = IsTerminal(change.to) ? change.at_ms : 0;
  if (change.reset_attempts) {
    d.attempts = 0;
  }
  if (change.attempt) {
    if (change.consume_attempt) {
      ++d.attempts;
    }
    d.history.push_back(*change.attempt);
    size_t drop = d.history.size() > history_limit ? d.history.size() - history_limit : 0;
    size_t bytes = 0;
    for (const Attempt& a : d.history) {
      bytes += AttemptBytes(a);
    }
    for (size_t i = 0; i < drop; ++i) {
      bytes -= AttemptBytes(d.history[i]);
    }
    while (bytes > kMaxHistoryBytes && drop + 1 < d.history.size()) {
      bytes -= AttemptBytes(d.history[drop]);
      ++drop;
    }
    d.history.erase(d.history.begin(), d.history.begin() + static_cast<long>(drop));
  }
  return Status::Ok();
}

}  // namespace egress::storage
