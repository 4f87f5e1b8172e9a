#pragma once

#include <array>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatcher/base/status.h"
#include "dispatcher/pacing/budget.h"

namespace egress::pacing {

// The effective budget of each name for each tenant: the deployment default, unless the
// tenant's operator override replaces it (PUT /api/admin/tenants/{id}/rate_limits). Not
// thread-safe: all methods run on the dispatcher loop.
class BudgetTable {
 public:
  BudgetTable();

  // The budget `name` has for `tenant`.
  Budget Effective(const std::string& tenant, BudgetName name) const;

  // Replaces the deployment default of `name`. kInvalidArgument for a non-positive field.
  Status SetDefault(BudgetName name, const Budget& budget);

  // Replaces the tenant's whole override map (an empty list clears it). kInvalidArgument, naming
  // the budget, for a non-positive field; nothing changes then.
  Status SetOverrides(const std::string& tenant,
                      const std::vector<std::pair<BudgetName, Budget>>& overrides);

 private:
  using Overrides = std::array<std::optional<Budget>, kMaxBudgetNames>;

  std::array<Budget, kMaxBudgetNames> defaults_;
  std::unordered_map<std::string, Overrides> overrides_;
};

}  // namespace egress::pacing
