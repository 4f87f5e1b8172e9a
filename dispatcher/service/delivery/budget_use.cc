#include "dispatcher/service/delivery/budget_use.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
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

double BudgetUse::Take(std::string_view tenant, pacing::BudgetName budget, pacing::ScopeKey key,
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
    scope.index = keys_.size();
    keys_.push_back(key);
  }
  Advance(scope, slot);
  scope.per_minute =
      std::max(1e-9, static_cast<double>(budget_value.limit) * 60'000.0 /
                         static_cast<double>(std::max<int64_t>(1, budget_value.scale_ms)));
  scope.slots[static_cast<size_t>(slot % kSlots)] += units;
  totals_.find(*scope.owner)->second += units;
  uint64_t minute = 0;
  for (uint32_t n : scope.slots) {
    minute += n;
  }
  return static_cast<double>(minute) / scope.per_minute;
}

void BudgetUse::EraseScope(std::unordered_map<pacing::ScopeKey, Scope>::iterator it) {
  const size_t index = it->second.index;
  if (index + 1 < keys_.size()) {
    keys_[index] = keys_.back();
    scopes_.find(keys_[index])->second.index = index;
  }
  keys_.pop_back();
  scopes_.erase(it);
}

void BudgetUse::Prune(SteadyTime now) {
  const int64_t slot = SlotOf(now);
  for (auto it = scopes_.begin(); it != scopes_.end();) {
    Advance(it->second, slot);
    const bool idle = std::all_of(it->second.slots.begin(), it->second.slots.end(),
                                  [](uint32_t n) { return n == 0; });
    if (idle) {
      auto gone = it++;
      EraseScope(gone);
    } else {
      ++it;
    }
  }
}

std::vector<BudgetUse::Total> BudgetUse::Totals() const {
  std::vector<Total> out;
  out.reserve(totals_.size());
  for (const auto& [owner, units] : totals_) {
    out.push_back({owner.first, owner.second, units});
  }
  return out;
}

std::vector<BudgetUse::Ratio> BudgetUse::Utilization(SteadyTime now) {
  std::vector<Ratio> out;
  Walk walk(*this, now);
  while (!walk.Step(
      SIZE_MAX, [](const Total&) {}, [&out](const Ratio& r) { out.push_back(r); })) {
  }
  std::sort(out.begin(), out.end(), [](const Ratio& a, const Ratio& b) {
    return std::tie(a.tenant, a.budget) < std::tie(b.tenant, b.budget);
  });
  return out;
}

BudgetUse::Walk::Walk(BudgetUse& use, SteadyTime now)
    : use_(use), slot_(SlotOf(now)), scopes_(use.keys_) {}

bool BudgetUse::Walk::Step(size_t max, const std::function<void(const Total&)>& total,
                           const std::function<void(const Ratio&)>& ratio) {
  size_t budget = std::max<size_t>(1, max);
  if (!totals_done_) {
    auto it = last_total_ ? use_.totals_.upper_bound(*last_total_) : use_.totals_.begin();
    for (; it != use_.totals_.end() && budget > 0; ++it, --budget) {
      total({it->first.first, it->first.second, it->second});
      last_total_ = it->first;
    }
    totals_done_ = it == use_.totals_.end();
  }
  for (; next_scope_ < scopes_.size() && budget > 0; ++next_scope_, --budget) {
    auto it = use_.scopes_.find(scopes_[next_scope_]);
    if (it == use_.scopes_.end()) {
      continue;  // pruned meanwhile
    }
    Scope& scope = it->second;
    Advance(scope, slot_);
    uint64_t units = 0;
    for (uint32_t n : scope.slots) {
      units += n;
    }
    if (units == 0) {
      use_.EraseScope(it);
      continue;
    }
    double& highest = highest_[scope.owner];
    highest = std::max(highest, static_cast<double>(units) / scope.per_minute);
  }
  if (next_scope_ < scopes_.size()) {
    return false;
  }
  if (!ratios_started_) {
    next_ratio_ = highest_.cbegin();
    ratios_started_ = true;
  }
  for (; next_ratio_ != highest_.cend() && budget > 0; ++next_ratio_, --budget) {
    ratio({next_ratio_->first->first, next_ratio_->first->second, next_ratio_->second});
  }
  return totals_done_ && next_ratio_ == highest_.cend();
}

}  // namespace egress::service
