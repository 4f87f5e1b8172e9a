#include <algorithm>

#include "dispatcher/pacing/scheduler.h"

// Scheduler: what it knows of a destination (GET /v1/destinations) and the periodic sweep.
namespace egress::pacing {

Result<DestinationView> Scheduler::Inspect(DestinationId id) const {
  Result<const Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  const Dest& dest = **found;
  DestinationView view;
  view.has_head = dest.has_head;
  view.in_flight = dest.in_flight;
  view.disabled = dest.disabled;
  view.paused = dest.paused;
  if (dest.origin != ConnectionBudget::kNoOrigin) {
    view.origin_kept = conns_.kept(dest.origin);
    view.origin_in_flight = conns_.sending(dest.origin) - view.origin_kept;
    view.origin_waiting = static_cast<int64_t>(conns_.waiting_to_send(dest.origin));
    view.origin_capacity = std::min<int64_t>(conns_.capacity(dest.origin), INT32_MAX);
  }
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  view.budget_name = scopes_.name(leaf);
  view.budget = scopes_.budget(leaf);
  view.budget_learned = scopes_.learned(leaf);
  if (const int64_t burst = SiblingBurst(dest); burst > 0 && burst < view.budget.burst) {
    view.budget.burst = burst;
    view.budget_learned = true;
  }
  if (auto meter = store_.Inspect(scopes_.at(leaf).key, scopes_.params(leaf), clock_.Now())) {
    view.remaining = meter->remaining;
  }
  if (auto it = disabled_reasons_.find(id.value); it != disabled_reasons_.end()) {
    view.disabled_reason = it->second;
  }
  if (!adaptive_.empty()) {
    const uint32_t leaf = dest.scopes[dest.leaf_index];
    if (auto it = adaptive_.find(scopes_.at(leaf).key); it != adaptive_.end()) {
      view.adaptive = scopes_.budget(leaf);
      view.adaptive_probing = it->second.probing();
    }
  }
  view.stated_window = !stated_.empty() && stated_.contains(scopes_.at(leaf).key);
  view.key_shared = Shared(leaf);
  view.head_priority = static_cast<Priority>(dest.head_priority);
  // The slowest meter of the path, as it paces (margin, learned and lowered limits included;
  // a bulk head at its share of the shared ones), in deliveries of the head's cost. A key paced
  // to the window its headers state (Discord's routes) is left out.
  const bool bulk = view.head_priority == Priority::kBulk && options_.bulk_share < 1;
  double slowest = -1;
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    if (i == dest.leaf_index && view.stated_window) {
      continue;  // paced to the window its headers state, not to its meter's rate
    }
    const GcraParams& params = scopes_.params(dest.scopes[i]);
    double per_s = 1e9 / static_cast<double>(std::max<int64_t>(1, params.interval_ns));
    if (bulk && Shared(dest.scopes[i])) {
      per_s *= options_.bulk_share;
    }
    slowest = slowest < 0 ? per_s : std::min(slowest, per_s);
  }
  if (slowest > 0) {
    view.foreseen_per_s = slowest / (dest.has_head ? dest.head_cost : 1);
  }
  if (!dest.has_head || dest.state == State::kEmpty) {
    return view;
  }
  if (dest.state == State::kReady) {
    if (dest.reason == DeferReason::kPlatformConcurrency ||
        dest.reason == DeferReason::kTenantConcurrency) {
      view.deferral.reason = dest.reason;
    }
    return view;
  }
  view.deferral.reason = dest.reason;
  if (dest.reason == DeferReason::kBudget || dest.reason == DeferReason::kBulkShare ||
      dest.reason == DeferReason::kRetryAfter || dest.reason == DeferReason::kRemainingZero) {
    view.deferral.budget = dest.reason_budget;
  }
  if (dest.state == State::kTimer || dest.state == State::kScopeWait) {
    view.deferral.until = FromNanos(dest.until_ns);
  }
  if (dest.state == State::kDisabled) {
    if (dest.disabled) {
      view.deferral.detail = view.disabled_reason;
    } else if (auto it = paused_reasons_.find(id.value); it != paused_reasons_.end()) {
      view.deferral.detail = it->second;
    }
  }
  return view;
}

Result<Budget> Scheduler::EffectiveBudget(DestinationId id, BudgetName budget) const {
  Result<const Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  const Dest& dest = **found;
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    if (scopes_.name(dest.scopes[i]) == budget) {
      Budget effective = scopes_.budget(dest.scopes[i]);
      if (i == dest.leaf_index) {
        if (const int64_t burst = SiblingBurst(dest); burst > 0) {
          effective.burst = std::min(effective.burst, burst);
        }
      }
      return effective;
    }
  }
  return Status::NotFound(std::string(BudgetNameString(budget)) + " is not on the path");
}

Result<PathScopes> Scheduler::ScopesOf(DestinationId id) const {
  Result<const Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  const Dest& dest = **found;
  PathScopes out;
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    out.scopes[i] = {.name = scopes_.name(dest.scopes[i]),
                     .key = scopes_.at(dest.scopes[i]).key,
                     .budget = scopes_.budget(dest.scopes[i])};
  }
  out.size = dest.scope_count;
  return out;
}

size_t Scheduler::Sweep() {
  const int64_t now_ns = ToNanos(clock_.Now());
  std::erase_if(recent_, [&](const auto& entry) {
    return now_ns - entry.second.start_ns >= 2 * entry.second.window_ns;
  });
  std::erase_if(windows_, [&](const auto& entry) { return entry.second.Idle(now_ns); });
  std::erase_if(shadow_tat_, [&](const auto& entry) { return entry.second <= now_ns; });
  std::erase_if(departed_, [&](const auto& entry) { return entry.second.until_ns <= now_ns; });
  std::erase_if(shared_learned_, [&](const auto& entry) {
    return now_ns - entry.second.received_ns >= Nanos(kSharedLearnedTtl).count();
  });
  return store_.Sweep(clock_.Now());
}

}  // namespace egress::pacing
