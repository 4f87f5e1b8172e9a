#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "dispatcher/base/check.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/saturating.h"
#include "dispatcher/pacing/budget.h"

namespace egress::pacing {

using Nanos = std::chrono::nanoseconds;

// A budget in GCRA terms: one unit every `interval_ns` (rounded up, so a meter never runs faster
// than its budget), at most `depth` units at once.
struct GcraParams {
  int64_t interval_ns = 1'000'000'000;
  int64_t depth = 1;

  static GcraParams FromBudget(const Budget& budget);
  friend bool operator==(const GcraParams&, const GcraParams&) = default;
};

// The answer for one request of `cost` units at `now`.
struct GcraDecision {
  bool allowed = false;
  // Whole units that could still pass at `now` after this decision.
  int64_t remaining = 0;
  // On denial: the exact wait until the same request would pass. Zero on acceptance.
  Nanos retry_after{0};
  // Until the meter is empty (full capacity again).
  Nanos reset_after{0};
  // The theoretical arrival time to store: advanced on acceptance, unchanged on denial.
  int64_t tat_ns = 0;
};

// Whole units a meter with stored time `tat_ns` could take at `now_ns`: 0 to params.depth.
inline int64_t GcraRemaining(int64_t tat_ns, const GcraParams& params, int64_t now_ns) {
  const int64_t interval = std::max<int64_t>(1, params.interval_ns);
  const int64_t base = std::max(tat_ns, now_ns);
  const int64_t room = SatSub(now_ns, SatSub(base, SatMul(params.depth, interval)));
  return std::clamp<int64_t>(room / interval, 0, std::max<int64_t>(0, params.depth));
}

// Pure GCRA (the generic cell rate algorithm, as redis_rate's Lua script): `tat_ns` is the
// stored theoretical arrival time (0 for a fresh key), `now_ns` the current steady time. Never
// sleeps; the caller stores `tat_ns` of the result. A cost above `params.depth` is allowed only
// through an empty meter. `cost` must be in [1, 1'000'000].
// Inline: it runs once per scope of every scheduling decision.
//
// Every step saturates (dispatcher/base/saturating.h): with a stored time, a clock or parameters
// far out of range the answer is a very long wait, never a wrapped one.
inline GcraDecision GcraEvaluate(int64_t tat_ns, const GcraParams& params, int64_t cost,
                                 int64_t now_ns) {
  EGRESS_CHECK(cost >= 1 && cost <= 1'000'000);
  const int64_t interval = std::max<int64_t>(1, params.interval_ns);
  const int64_t depth = std::max(params.depth, cost);
  const int64_t base = std::max(tat_ns, now_ns);
  const int64_t new_tat = SatAdd(base, SatMul(cost, interval));
  // base + cost*interval - depth*interval, as one product (depth >= cost): two products that
  // both saturated would cancel out and let a costly request through a meter that is not empty.
  const int64_t allow_at = SatSub(base, SatMul(depth - cost, interval));
  GcraDecision decision;
  if (now_ns < allow_at) {
    decision.allowed = false;
    decision.retry_after = Nanos(SatSub(allow_at, now_ns));
    decision.reset_after = Nanos(SatSub(base, now_ns));
    decision.remaining = GcraRemaining(tat_ns, params, now_ns);
    decision.tat_ns = tat_ns;
    return decision;
  }
  decision.allowed = true;
  decision.remaining = GcraRemaining(new_tat, params, now_ns);
  decision.reset_after = Nanos(SatSub(new_tat, now_ns));
  decision.tat_ns = new_tat;
  return decision;
}

// Nanoseconds since the steady clock's epoch, the unit meters store.
inline int64_t ToNanos(SteadyTime t) {
  return std::chrono::duration_cast<Nanos>(t.time_since_epoch()).count();
}
inline SteadyTime FromNanos(int64_t ns) {
  return SteadyTime(std::chrono::duration_cast<SteadyTime::duration>(Nanos(ns)));
}

// One GCRA meter that refills lazily from elapsed time (Envoy TokenBucketImpl habits): it owns no
// timer, never sleeps, and answers NextAvailable() with a delay. Not thread-safe; all methods
// run on the dispatcher loop.
class GcraMeter {
 public:
  GcraMeter(const Clock& clock, const Budget& budget);

  // Takes `cost` units if they conform now; otherwise takes nothing and says how long to wait.
  GcraDecision Consume(int64_t cost);
  // Zero when `cost` units would pass now, else the wait until they would.
  Nanos NextAvailable(int64_t cost) const;
  // Whole units that would pass now.
  int64_t Remaining() const;

 private:
  const Clock& clock_;
  GcraParams params_;
  int64_t tat_ns_ = 0;
};

}  // namespace egress::pacing
