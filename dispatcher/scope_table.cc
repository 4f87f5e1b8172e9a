#include "dispatcher/scope_table.h"

#include "dispatcher/check.h"

namespace egress::dispatcher {

uint32_t ScopeTable::Acquire(ScopeKey key, BudgetName name, uint32_t tenant, const Budget& budget) {
  auto [it, inserted] = index_.try_emplace(key, kNil);
  if (!inserted) {
    ++slots_[it->second].refs;
    return it->second;
  }
  uint32_t index;
  if (free_.empty()) {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    index = free_.back();
    free_.pop_back();
  }
  Slot& slot = slots_[index];
  const uint32_t generation = slot.timer_generation + 1;
  slot = Slot{};
  slot.timer_generation = generation;
  slot.key = key;
  slot.name = name;
  slot.tenant = tenant;
  slot.refs = 1;
  SetBudget(index, budget, false);
  it->second = index;
  return index;
}

void ScopeTable::Release(uint32_t index) {
  Slot& slot = slots_[index];
  EGRESS_CHECK(slot.refs > 0);
  if (--slot.refs > 0) {
    return;
  }
  EGRESS_CHECK(slot.wait_head == kNil);
  index_.erase(slot.key);
  ++slot.timer_generation;
  slot.armed_ns = INT64_MAX;
  free_.push_back(index);
}

void ScopeTable::SetBudget(uint32_t index, const Budget& budget, bool learned) {
  Slot& slot = slots_[index];
  slot.budget = budget;
  slot.params = GcraParams::FromBudget(budget);
  slot.learned = learned;
}

}  // namespace egress::dispatcher
