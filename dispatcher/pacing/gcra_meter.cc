#include "dispatcher/pacing/gcra_meter.h"

#include <algorithm>

#include "dispatcher/base/check.h"

namespace egress::pacing {

GcraParams GcraParams::FromBudget(const Budget& budget) {
  EGRESS_CHECK(budget.Valid());
  const int64_t scale_ns = SatMul(budget.scale_ms, 1'000'000);
  GcraParams params;
  params.interval_ns = std::max<int64_t>(1, SatAdd(scale_ns, budget.limit - 1) / budget.limit);
  params.depth = budget.burst;
  return params;
}

GcraMeter::GcraMeter(const Clock& clock, const Budget& budget)
    : clock_(clock), params_(GcraParams::FromBudget(budget)) {}

GcraDecision GcraMeter::Consume(int64_t cost) {
  GcraDecision decision = GcraEvaluate(tat_ns_, params_, cost, ToNanos(clock_.Now()));
  tat_ns_ = decision.tat_ns;
  return decision;
}

Nanos GcraMeter::NextAvailable(int64_t cost) const {
  return GcraEvaluate(tat_ns_, params_, cost, ToNanos(clock_.Now())).retry_after;
}

int64_t GcraMeter::Remaining() const {
  return GcraRemaining(tat_ns_, params_, ToNanos(clock_.Now()));
}

}  // namespace egress::pacing
