#include "dispatcher/service/delivery/budget_use.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <tuple>

namespace egress::service {

int64_t BudgetUse::SlotOf(SteadyTime now) {
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  return ms / kSlotMs;
}

void BudgetUse::Advance(Scope& scope, int64_t slot) {
  if (slot <= scope.newest_slot) {
    return;
  }
  if (slot - scope.newest_slot >= static_cast<int64_t>(kSlots)) {
    scope.slots.fill(0);
  } else {
    for (int64_t s = scope.newest_slot + 1; s <= slot; ++s) {
      scope.slots[static_cast<size_t>(s % kSlots)] = 0;
    }
  }
  scope.newest_slot = slot;
}

void BudgetUse::Take(std::string_view tenant, pacing::BudgetName budget, pacing::ScopeKey key,
                     const pacing::Budget& budget_value, uint32_t units, SteadyTime now) {
  const int64_t slot = SlotOf(now);
  auto [it, added] = scopes_.try_emplace(key);
  Scope& scope = it->second;
  if (added || scope.owner->second != budget || scope.owner->first != tenant) {
    auto total = totals_.try_emplace(std::pair(std::string(tenant), budget), 0).first;
    scope.owner = &total->first;
  }
  if (added) {
    scope.newest_slot = slot;
  }
  Advance(scope, slot);
  scope.per_minute =
      std::max(1e-9, static_cast<double>(budget_value.limit) * 60'000.0 /
                         static_cast<double>(std::max<int64_t>(1, budget_value.scale_ms)));
  scope.slots[static_cast<size_t>(slot % kSlots)] += units;
  totals_.find(*scope.owner)->second += units;
}

std::vector<BudgetUse::Total> BudgetUse::Totals() const {
  std::vector<Total> out;
  out.reserve(totals_.size());
  for (const auto& [owner, units] : totals_) {
    out.push_back({owner.first, owner.second, units});
  }
  return out;
}

void BudgetUse::Prune(SteadyTime now) {
  const int64_t slot = SlotOf(now);
  for (auto it = scopes_.begin(); it != scopes_.end();) {
    Advance(it->second, slot);
    const bool idle = std::all_of(it->second.slots.begin(), it->second.slots.end(),
                                  [](uint32_t n) { return n == 0; });
    it = idle ? scopes_.erase(it) : std::next(it);
  }
}

std::vector<BudgetUse::Ratio> BudgetUse::Utilization(SteadyTime now) {
  Prune(now);
  std::map<const std::pair<std::string, pacing::BudgetName>*, double> highest;
  for (const auto& [key, scope] : scopes_) {
    uint64_t units = 0;
    for (uint32_t n : scope.slots) {
      units += n;
    }
    double& ratio = highest[scope.owner];
    ratio = std::max(ratio, static_cast<double>(units) / scope.per_minute);
  }
  std::vector<Ratio> out;
  out.reserve(highest.size());
  for (const auto& [owner, ratio] : highest) {
    out.push_back({owner->first, owner->second, ratio});
  }
  std::sort(out.begin(), out.end(), [](const Ratio& a, const Ratio& b) {
    return std::tie(a.tenant, a.budget) < std::tie(b.tenant, b.budget);
  });
  return out;
}

}  // namespace egress::service
