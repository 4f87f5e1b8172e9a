#include "dispatcher/service/api/intake_limiter.h"

#include <algorithm>

namespace egress::service {

namespace {

// Intake is metered as a window: a tenant may send its whole limit at once.
pacing::Budget AsWindow(pacing::Budget b) {
  b.burst = std::max(b.burst, b.limit);
  return b;
}

}  // namespace

IntakeLimiter::IntakeLimiter(const Clock& clock, pacing::Budget default_budget)
    : clock_(clock), default_budget_(AsWindow(default_budget)) {}

IntakeLimiter::Decision IntakeLimiter::Take(const std::string& tenant, int64_t units) {
  auto [it, fresh] = tenants_.try_emplace(tenant, Tenant{default_budget_, 0, false});
  Tenant& t = it->second;
  const auto params = pacing::GcraParams::FromBudget(t.budget);
  const auto d = pacing::GcraEvaluate(t.tat_ns, params, units, pacing::ToNanos(clock_.Now()));
  if (d.allowed) {
    t.tat_ns = d.tat_ns;
  }
  return {
      d.allowed, t.budget, d.remaining,
      std::chrono::duration_cast<Millis>(d.retry_after + Millis(1) - std::chrono::nanoseconds(1)),
      std::chrono::duration_cast<Millis>(d.reset_after)};
}

void IntakeLimiter::SetBudget(const std::string& tenant, std::optional<pacing::Budget> budget) {
  // A new budget starts with a full meter: the old one's arrival time means nothing to it.
  tenants_[tenant] = Tenant{budget ? AsWindow(*budget) : default_budget_, 0, budget.has_value()};
}

void IntakeLimiter::SetDefaultBudget(pacing::Budget budget) {
  default_budget_ = AsWindow(budget);
  for (auto& [name, t] : tenants_) {
    if (!t.overridden && !(t.budget == default_budget_)) {
      t = Tenant{default_budget_, 0, false};
    }
  }
}

}  // namespace egress::service
