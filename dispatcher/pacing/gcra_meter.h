#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

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
// The times are computed exactly in 128 bits (cost x interval and depth x interval pass 2^63 for
// a valid budget: 10^6 units of one per 3 hours is 1.08e19 ns) and only the answers are held
// within int64 (dispatcher/base/saturating.h's ends): a stored time that far ahead keeps the
// meter closed. Saturating each step instead let both products stop at INT64_MAX and cancel, so
// such a request passed every time.
inline GcraDecision GcraEvaluate(int64_t tat_ns, const GcraParams& params, int64_t cost,
                                 int64_t now_ns) {
  EGRESS_CHECK(cost >= 1 && cost <= 1'000'000);
  using Wide = __int128;
  const auto held = [](Wide t) {
    return static_cast<int64_t>(std::min<Wide>(t, std::numeric_limits<int64_t>::max()));
  };
  const int64_t interval = std::max<int64_t>(1, params.interval_ns);
  const int64_t depth = std::max(params.depth, cost);
  const int64_t base = std::max(tat_ns, now_ns);
  const Wide new_tat = Wide{base} + Wide{cost} * interval;
  const Wide allow_at = new_tat - Wide{depth} * interval;
  GcraDecision decision;
  if (now_ns < allow_at) {
    decision.allowed = false;
    decision.retry_after = Nanos(held(allow_at - now_ns));
    decision.reset_after = Nanos(held(Wide{base} - now_ns));
    decision.remaining = GcraRemaining(tat_ns, params, now_ns);
    decision.tat_ns = tat_ns;
    return decision;
  }
  decision.allowed = true;
  decision.tat_ns = held(new_tat);
  decision.remaining = GcraRemaining(decision.tat_ns, params, now_ns);
  decision.reset_after = Nanos(held(new_tat - now_ns));
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
