#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/budget_store.h"

namespace egress::service {

// What tenants take from their budgets, for /metrics: every unit since start per (tenant, budget),
// and per scope (a key of a budget: the tenant's egress, a credential's token-wide budget, a
// destination's own key) the units of the last minute, kept in twelve 5-second slots, so "the
// last minute" is the last 55 to 60 seconds. A scope belongs to one tenant (its key includes the
// tenant's name or credential). Memory: one entry per scope used in the last minute (Prune drops
// the others) and one per (tenant, budget) ever used. Not thread-safe: the delivery loop owns it.
class BudgetUse {
 public:
  // `units` were taken from scope `key` of `budget` for `tenant`, whose budget is `budget_value`.
  void Take(std::string_view tenant, pacing::BudgetName budget, pacing::ScopeKey key,
            const pacing::Budget& budget_value, uint32_t units, SteadyTime now);

  struct Total {
    std::string tenant;
    pacing::BudgetName budget;
    uint64_t units = 0;
  };
  // Units taken since start, per (tenant, budget), ordered by tenant then budget.
  std::vector<Total> Totals() const;

  struct Ratio {
    std::string tenant;
    pacing::BudgetName budget;
    double ratio = 0;
  };
  // Per (tenant, budget) with use in the last minute: of the tenant's scopes of that budget, the
  // highest units taken in the last minute divided by the scope's budget for one minute
  // (limit * 60 s / scale). Ordered by tenant then budget. Prunes first.
  std::vector<Ratio> Utilization(SteadyTime now);

  // Forgets the scopes with nothing taken in the last minute.
  void Prune(SteadyTime now);
  size_t scope_count() const { return scopes_.size(); }

 private:
  static constexpr int64_t kSlotMs = 5000;
  static constexpr size_t kSlots = 12;
  struct Scope {
    const std::pair<std::string, pacing::BudgetName>* owner = nullptr;  // key of totals_
    double per_minute = 1;
    int64_t newest_slot = 0;  // the slot (time / kSlotMs) slots[newest_slot % kSlots] counts
    std::array<uint32_t, kSlots> slots{};
  };
  // Moves `scope`'s window forward to `slot`, clearing the slots that fell out of it.
  static void Advance(Scope& scope, int64_t slot);
  static int64_t SlotOf(SteadyTime now);

  std::map<std::pair<std::string, pacing::BudgetName>, uint64_t, std::less<>> totals_;
  std::unordered_map<pacing::ScopeKey, Scope> scopes_;
};

}  // namespace egress::service
