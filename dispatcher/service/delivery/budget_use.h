#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatcher/base/check.h"
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
  // Returns the scope's use of the last minute with them: its units over its budget for a
  // minute (1 is the whole budget).
  double Take(std::string_view tenant, pacing::BudgetName budget, pacing::ScopeKey key,
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
  size_t scope_count() const {
    EGRESS_CHECK(keys_.size() == scopes_.size());
    return scopes_.size();
  }

  // Totals() and Utilization() a bounded number at a time, for a refresh spread over turns of
  // the loop (GET /metrics at 10,000 tenants: tens of thousands of each): a walk made at `now` is
  // stepped until Step returns true. Each (tenant, budget) total is read when a step reaches it
  // (the totals are walked by key, so those added meanwhile after the step's place are seen too);
  // the scopes' keys are copied when the walk starts (8 bytes a scope, kept side by side), each
  // is read, and pruned when idle, when a step reaches it, and the ratios are told once every
  // scope was read.
  // Must not outlive the BudgetUse; the loop's thread only.
  class Walk {
   public:
    Walk(BudgetUse& use, SteadyTime now);
    // Calls `total` for each total, then `ratio` for each ratio, reading up to `max` totals,
    // scopes or ratios in all; true when the walk is done.
    bool Step(size_t max, const std::function<void(const Total&)>& total,
              const std::function<void(const Ratio&)>& ratio);

   private:
    using Owner = std::pair<std::string, pacing::BudgetName>;
    BudgetUse& use_;
    int64_t slot_ = 0;
    std::optional<Owner> last_total_;  // where the totals' walk is (none: at the start)
    bool totals_done_ = false;
    std::vector<pacing::ScopeKey> scopes_;
    size_t next_scope_ = 0;
    // The highest ratio of each (tenant, budget)'s scopes; keys point into use_.totals_, whose
    // entries are never erased.
    std::map<const Owner*, double> highest_;
    std::map<const Owner*, double>::const_iterator next_ratio_;
    bool ratios_started_ = false;
  };

 private:
  static constexpr int64_t kSlotMs = 5000;
  static constexpr size_t kSlots = 12;
  struct Scope {
    const std::pair<std::string, pacing::BudgetName>* owner = nullptr;  // key of totals_
    double per_minute = 1;
    size_t index = 0;         // its place in keys_
    int64_t newest_slot = 0;  // the slot (time / kSlotMs) slots[newest_slot % kSlots] counts
    std::array<uint32_t, kSlots> slots{};
  };
  // Moves `scope`'s window forward to `slot`, clearing the slots that fell out of it.
  static void Advance(Scope& scope, int64_t slot);
  static int64_t SlotOf(SteadyTime now);

  std::map<std::pair<std::string, pacing::BudgetName>, uint64_t, std::less<>> totals_;
  // Drops a scope from scopes_ and keys_.
  void EraseScope(std::unordered_map<pacing::ScopeKey, Scope>::iterator it);

  std::unordered_map<pacing::ScopeKey, Scope> scopes_;
  // The keys of scopes_, side by side: a walk copies them at once (a copy read from the map's
  // nodes took 2.5-3.3 ms of the loop at 10,000 tenants: bench/README.md, section 12).
  std::vector<pacing::ScopeKey> keys_;
};

}  // namespace egress::service
