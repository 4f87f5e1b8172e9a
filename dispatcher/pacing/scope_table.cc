#include "dispatcher/pacing/scope_table.h"

#include "dispatcher/base/check.h"

namespace egress::pacing {
namespace {

constexpr uint32_t kNil = ScopeTable::kNil;

}  // namespace

size_t ScopeTable::BudgetHash::operator()(const Budget& budget) const {
  uint64_t h = static_cast<uint64_t>(budget.limit) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint64_t>(budget.scale_ms) + 0x632be59bd9b4e019ULL + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(budget.burst) + 0x94d049bb133111ebULL + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

size_t ScopeTable::FindBucket(ScopeKey key) const {
  // Keys are well-mixed hashes (scope_path.h), so their low bits index the table.
  const size_t mask = index_.size() - 1;
  size_t i = static_cast<size_t>(key) & mask;
  while (index_[i] != kNil && slots_[index_[i]].key != key) {
    i = (i + 1) & mask;
  }
  return i;
}

void ScopeTable::GrowIndex() {
  std::vector<uint32_t> old = std::move(index_);
  index_.assign(old.empty() ? 16 : old.size() * 2, kNil);
  for (uint32_t slot : old) {
    if (slot != kNil) {
      index_[FindBucket(slots_[slot].key)] = slot;
    }
  }
}

void ScopeTable::EraseFromIndex(ScopeKey key) {
  // Linear probing with backward-shift deletion: no tombstones.
  const size_t mask = index_.size() - 1;
  size_t hole = FindBucket(key);
  EGRESS_CHECK(index_[hole] != kNil);
  for (size_t j = (hole + 1) & mask; index_[j] != kNil; j = (j + 1) & mask) {
    const size_t home = static_cast<size_t>(slots_[index_[j]].key) & mask;
    // The entry at j may move to the hole unless its home lies cyclically in (hole, j].
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!stays) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = kNil;
}

uint32_t ScopeTable::Intern(const Budget& budget) {
  auto [it, inserted] = budget_index_.try_emplace(budget, kNil);
  if (inserted) {
    uint32_t index;
    if (free_budgets_.empty()) {
      index = static_cast<uint32_t>(budgets_.size());
      EGRESS_CHECK(index < (1u << 25));
      budgets_.emplace_back();
    } else {
      index = free_budgets_.back();
      free_budgets_.pop_back();
    }
    GcraParams params = GcraParams::FromBudget(budget);
    params.interval_ns += static_cast<int64_t>(static_cast<double>(params.interval_ns) * margin_);
    budgets_[index] = BudgetEntry{budget, params, 0};
    it->second = index;
  }
  ++budgets_[it->second].refs;
  return it->second;
}

void ScopeTable::Unintern(uint32_t index) {
  BudgetEntry& entry = budgets_[index];
  EGRESS_CHECK(entry.refs > 0);
  if (--entry.refs == 0) {
    budget_index_.erase(entry.budget);
    free_budgets_.push_back(index);
  }
}

uint32_t ScopeTable::Acquire(ScopeKey key, BudgetName name, uint32_t tenant, const Budget& budget) {
  if ((count_ + 1) * 2 > index_.size()) {
    GrowIndex();
  }
  const size_t bucket = FindBucket(key);
  if (index_[bucket] != kNil) {
    ++slots_[index_[bucket]].refs;
    return index_[bucket];
  }
  uint32_t index;
  if (free_.empty()) {
    index = static_cast<uint32_t>(slots_.Grow());
  } else {
    index = free_.back();
    free_.pop_back();
  }
  Slot& slot = slots_[index];
  const uint32_t generation = slot.timer_generation + 1;
  slot = Slot{};
  slot.timer_generation = generation;
  slot.key = key;
  slot.name = static_cast<uint32_t>(name);
  slot.tenant = tenant;
  slot.refs = 1;
  slot.budget = Intern(budget);
  index_[bucket] = index;
  ++count_;
  return index;
}

uint32_t ScopeTable::Find(ScopeKey key) const {
  return index_.empty() ? kNil : index_[FindBucket(key)];
}

void ScopeTable::Release(uint32_t index) {
  Slot& slot = slots_[index];
  EGRESS_CHECK(slot.refs > 0);
  if (--slot.refs > 0) {
    return;
  }
  EGRESS_CHECK(slot.waiting.empty());
  EraseFromIndex(slot.key);
  --count_;
  Unintern(slot.budget);
  ++slot.timer_generation;
  slot.armed_ns = INT64_MAX;
  free_.push_back(index);
}

void ScopeTable::SetBudget(uint32_t index, const Budget& budget, bool learned) {
  Slot& slot = slots_[index];
  const uint32_t old = slot.budget;
  slot.budget = Intern(budget);
  Unintern(old);
  slot.learned = learned ? 1 : 0;
}

}  // namespace egress::pacing
