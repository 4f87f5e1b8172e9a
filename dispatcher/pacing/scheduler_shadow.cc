#include "dispatcher/pacing/gcra_meter.h"
#include "dispatcher/pacing/scheduler.h"

// Scheduler: shadow budgets, metered beside the real ones and never enforced.
namespace egress::pacing {

Status Scheduler::SetTenantShadowBudgets(const std::string& tenant,
                                         const std::vector<std::pair<BudgetName, Budget>>& shadow) {
  std::vector<std::pair<BudgetName, GcraParams>> params;
  for (const auto& [name, budget] : shadow) {
    if (!budget.Valid()) {
      return Status::InvalidArgument("shadow budget " + std::string(BudgetNameString(name)) +
                                     ": limit, scale_ms and burst must be in range");
    }
    params.emplace_back(name, GcraParams::FromBudget(budget));
  }
  const uint32_t index = TenantIndex(tenant);
  if (params.empty()) {
    shadow_.erase(index);
  } else {
    shadow_[index] = std::move(params);
  }
  // A changed budget starts its meters afresh: what the old one took says nothing of the new.
  shadow_tat_.clear();
  return Status::Ok();
}

void Scheduler::MeterShadow(uint32_t d, int64_t now_ns) {
  const Dest& dest = dests_[d];
  auto it = shadow_.find(dest.tenant);
  if (it == shadow_.end()) {
    return;
  }
  for (const auto& [name, params] : it->second) {
    for (uint8_t i = 0; i < dest.scope_count; ++i) {
      const uint32_t scope = dest.scopes[i];
      if (scopes_.name(scope) != name) {
        continue;
      }
      int64_t& tat = shadow_tat_[scopes_.at(scope).key];
      const GcraDecision decision =
          GcraEvaluate(tat, params, std::min<int64_t>(dest.head_cost, 1'000'000), now_ns);
      if (decision.allowed) {
        tat = decision.tat_ns;
      }
      if (shadow_observer_) {
        shadow_observer_(DestinationId{d}, name, !decision.allowed);
      }
    }
  }
}

}  // namespace egress::pacing
