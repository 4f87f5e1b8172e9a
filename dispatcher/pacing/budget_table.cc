#include "dispatcher/pacing/budget_table.h"

namespace egress::pacing {

BudgetTable::BudgetTable() {
  for (int i = 0; i < kMaxBudgetNames; ++i) {
    defaults_[i] = DefaultBudget(static_cast<BudgetName>(i));
  }
}

Budget BudgetTable::Effective(const std::string& tenant, BudgetName name) const {
  const size_t index = static_cast<size_t>(name);
  auto it = overrides_.find(tenant);
  if (it != overrides_.end() && it->second[index].has_value()) {
    return *it->second[index];
  }
  return defaults_[index];
}

Status BudgetTable::SetDefault(BudgetName name, const Budget& budget) {
  if (!budget.Valid()) {
    return Status::InvalidArgument(std::string(BudgetNameString(name)) + ": fields must be > 0");
  }
  defaults_[static_cast<size_t>(name)] = budget;
  return Status::Ok();
}

Status BudgetTable::SetOverrides(const std::string& tenant,
                                 const std::vector<std::pair<BudgetName, Budget>>& overrides) {
  Overrides map;
  for (const auto& [name, budget] : overrides) {
    if (!budget.Valid()) {
      return Status::InvalidArgument(std::string(BudgetNameString(name)) + ": fields must be > 0");
    }
    map[static_cast<size_t>(name)] = budget;
  }
  if (overrides.empty()) {
    overrides_.erase(tenant);
  } else {
    overrides_[tenant] = map;
  }
  return Status::Ok();
}

}  // namespace egress::pacing
