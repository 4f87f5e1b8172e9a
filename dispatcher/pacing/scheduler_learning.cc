#include <algorithm>
#include <cmath>

#include "dispatcher/pacing/scheduler.h"

// Scheduler: what responses teach a destination's own key: the adaptive pace after header-less
// 429s, the sends counted in its window, a learned burst, a stated window (docs/pacing.md).
namespace egress::pacing {

Verdict Scheduler::AdaptToThrottle(const Dest& dest, uint32_t d, uint64_t sequence, Verdict verdict,
                                   Millis throttle_wait) {
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  auto it = adaptive_.find(key);
  if (it == adaptive_.end()) {
    it = adaptive_.try_emplace(key, options_.adaptive, scopes_.budget(leaf), scopes_.learned(leaf))
             .first;
  }
  AdaptivePace& pace = it->second;
  const SteadyTime now = clock_.Now();
  const Budget before = scopes_.budget(leaf);
  const int64_t now_ns = ToNanos(now);
  const bool canary = pace.IsCanary(d, sequence);
  const bool lowered = pace.OnThrottle(now_ns, Recent(key, now_ns));
  int64_t next_ns = now_ns;  // when this 429's request may go again: each branch sets it
  if (lowered) {
    const Millis park = pace.Park(throttle_wait, random_.Next(), now_ns);
    ParkScope(dest, dest.retry_after_index, park, ParkKind::kRetryAfter);
    next_ns = std::max(pace.park_until_ns(), now_ns);
  } else if (canary || pace.gate_open()) {
    // The platform has no room (yet, or again): the key parks until the next canary may go.
    next_ns = pace.CanaryRefused(now_ns);
    ParkScope(dest, dest.leaf_index, CeilMillis(next_ns - now_ns), ParkKind::kRetryAfter);
  } else {
    // Held off: a failed step's other 429s wait for its canary's gate (AdaptivePace), others
    // for the hold.
    next_ns = pace.HeldOffUntil(now_ns);
  }
  scopes_.SetBudget(leaf, pace.Current(), true);
  if (lowered || !(pace.Current() == before)) {
    ShareLeaf(leaf);
  }
  // The 429 that lowered the limit goes again when its park ends; a refused canary's at the
  // next canary's time; one held off at its gate or hold (above).
  verdict.next_attempt = FromNanos(next_ns);
  verdict.deferral.until = verdict.next_attempt;
  return verdict;
}

bool Scheduler::AdaptToSuccess(const Dest& dest, uint32_t d, uint64_t sequence) {
  if (adaptive_.empty()) {
    return false;
  }
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  auto it = adaptive_.find(key);
  if (it == adaptive_.end()) {
    return false;
  }
  const int64_t now_ns = ToNanos(clock_.Now());
  if (it->second.IsCanary(d, sequence)) {
    it->second.CanaryDelivered(now_ns);  // the rest go when the canary's park ends
  }
  if (!it->second.OnSuccess(now_ns, Recent(key, now_ns))) {
    return false;
  }
  const GcraParams before = scopes_.params(leaf);
  if (it->second.at_ceiling()) {
    scopes_.SetBudget(leaf, it->second.ceiling(), it->second.ceiling_learned());
    adaptive_.erase(it);
  } else {
    scopes_.SetBudget(leaf, it->second.Current(), true);
  }
  // The meter's debt is repaid at the new pace (a step up from 1/s would otherwise wait out
  // the second its last request was charged before going faster; a step down stretches it).
  const bool repaced = RepaceScope(leaf, before, clock_.Now());
  ShareLeaf(leaf);
  return repaced;
}

void Scheduler::DispatchCanary(const Dest& dest, uint32_t d) {
  auto it = adaptive_.find(scopes_.at(dest.scopes[dest.leaf_index]).key);
  if (it == adaptive_.end()) {
    return;
  }
  AdaptivePace& pace = it->second;
  const int64_t now_ns = ToNanos(clock_.Now());
  if (!pace.WantsCanary(now_ns)) {
    return;
  }
  pace.SetCanary(d, dest.head_sequence, now_ns);
  // Nothing else on the key (the leaf the pace belongs to, not a wider Retry-After scope) goes
  // until about its answer's time. The park is not lifted when the answer comes sooner: a
  // store's park (on a shared store, every node's) may hold another park of the same key as
  // well, which lifting would cancel.
  ParkScope(dest, dest.leaf_index, CeilMillis(pace.CanaryParkUntil(now_ns) - now_ns),
            ParkKind::kRetryAfter);
}

void Scheduler::CanaryLost(const Dest& dest, uint32_t d, uint64_t sequence) {
  auto it = adaptive_.find(scopes_.at(dest.scopes[dest.leaf_index]).key);
  if (it != adaptive_.end() && it->second.IsCanary(d, sequence)) {
    it->second.CanaryLost();  // the next request is the canary
  }
}

RecentWindow Scheduler::Recent(ScopeKey key, int64_t now_ns) const {
  auto it = recent_.find(key);
  if (it == recent_.end()) {
    return {};
  }
  const RecentCounts& c = it->second;
  const int64_t age = now_ns - c.start_ns;
  if (age >= 2 * c.window_ns) {
    return RecentWindow{0, 0};
  }
  if (age >= c.window_ns) {
    // The current bucket is the one before now; weigh it by the part still in the window.
    const double share = 1.0 - static_cast<double>(age - c.window_ns) / c.window_ns;
    return RecentWindow{static_cast<int64_t>(std::ceil(c.sent * share)),
                        static_cast<int64_t>(std::floor(c.delivered * share))};
  }
  // Sliding estimate: the current bucket and the part of the one before still in the window.
  const double before = 1.0 - static_cast<double>(age) / c.window_ns;
  return RecentWindow{c.sent + static_cast<int64_t>(std::ceil(c.sent_before * before)),
                      c.delivered + static_cast<int64_t>(std::floor(c.delivered_before * before)),
                      now_ns - c.since_ns < c.window_ns};
}

void Scheduler::CountRecent(const Dest& dest, bool delivered, int64_t now_ns) {
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  if (dest.platform != Platform::kLine && !adaptive_.contains(key)) {
    return;
  }
  RecentCounts& c = recent_[key];
  const int64_t window_ns = std::max<int64_t>(1, scopes_.budget(leaf).scale_ms) * 1'000'000;
  if (c.window_ns != window_ns || now_ns - c.start_ns >= 2 * window_ns) {
    c = RecentCounts{now_ns, window_ns, now_ns};
  } else if (now_ns - c.start_ns >= window_ns) {
    c.sent_before = c.sent;
    c.delivered_before = c.delivered;
    c.sent = 0;
    c.delivered = 0;
    c.start_ns += window_ns;
  }
  if (delivered) {
    c.delivered = std::min(c.delivered + 1, INT32_MAX - 1);
  } else {
    c.sent = std::min(c.sent + 1, INT32_MAX - 1);
  }
}

void Scheduler::LearnBurst(const Dest& dest, int64_t burst) {
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  Budget budget = scopes_.budget(leaf);
  if (stated_.contains(key)) {
    return;
  }
  // The platform refused a request the burst allowed: its burst is smaller, and its bucket is
  // empty now. A learned budget: overrides of the configured one no longer apply to this key.
  budget.burst = std::clamp<int64_t>(burst > 0 ? burst : budget.burst - 1, 1, budget.burst);
  if (budget.burst == scopes_.budget(leaf).burst && budget.burst <= 1) {
    return;
  }
  scopes_.SetBudget(leaf, budget, true);
  if (auto it = adaptive_.find(key); it != adaptive_.end()) {
    Budget ceiling = it->second.ceiling();
    ceiling.burst = std::min(ceiling.burst, budget.burst);
    it->second.SetCeiling(ceiling);
  }
  store_.Sync(key, scopes_.params(leaf), 0, clock_.Now()).IgnoreError();
  ShareLeaf(leaf);
}

void Scheduler::FollowStatedWindow(Dest& dest, const RateLimitObservation& observation) {
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  const bool stated = observation.limit.has_value() && *observation.limit > 0 &&
                      observation.remaining.has_value() && observation.reset_after.has_value();
  if (!stated) {
    if (stated_.empty()) {
      return;
    }
    auto it = stated_.find(key);
    if (it == stated_.end() || observation.retry_after.has_value()) {
      return;
    }
    // The headers went away: back to the leaky bucket (burst 1) at the learned rate.
    Budget budget = scopes_.budget(leaf);
    budget.burst = 1;
    stated_.erase(it);
    scopes_.SetBudget(leaf, budget, true);
    return;
  }
  if (observation.retry_after.has_value()) {
    return;  // a 429: its park decides
  }
  // The stated window: burst up to the limit, and exactly `remaining` units left now; the
  // meter refills at limit per window, and remaining 0 parks the key until the reset (Observe).
  Budget budget = scopes_.budget(leaf);
  budget.burst = std::clamp<int64_t>(budget.limit, 1, kMaxBudgetBurst);
  scopes_.SetBudget(leaf, budget, true);
  stated_[key] = budget;
  store_.Sync(key, scopes_.params(leaf), std::max<int64_t>(0, *observation.remaining), clock_.Now())
      .IgnoreError();
}

}  // namespace egress::pacing
