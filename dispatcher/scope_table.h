#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dispatcher/budget.h"
#include "dispatcher/budget_store.h"
#include "dispatcher/gcra_meter.h"

namespace egress::dispatcher {

// The scheduler's side of each scope key in use: its effective budget, how many destinations
// share it, and the destinations waiting for it to refill (an intrusive FIFO through the
// scheduler's destination links). A slot lives while a destination references it. Not
// thread-safe: all methods run on the dispatcher loop.
class ScopeTable {
 public:
  static constexpr uint32_t kNil = UINT32_MAX;

  struct Slot {
    ScopeKey key = 0;
    Budget budget;
    GcraParams params;
    uint32_t refs = 0;
    uint32_t tenant = 0;  // the tenant whose overrides apply
    uint32_t wait_head = kNil;
    uint32_t wait_tail = kNil;
    uint32_t timer_generation = 0;
    int64_t armed_ns = INT64_MAX;  // the pending refill wake-up, INT64_MAX when none
    BudgetName name = BudgetName::kTenantEgress;
    bool learned = false;  // budget came from response headers
  };

  // The slot of `key`, created with `budget` when new; adds one reference.
  uint32_t Acquire(ScopeKey key, BudgetName name, uint32_t tenant, const Budget& budget);
  // Drops one reference; the slot is freed with the last one.
  void Release(uint32_t index);
  // Sets the effective budget (learned from headers when `learned`).
  void SetBudget(uint32_t index, const Budget& budget, bool learned);

  Slot& at(uint32_t index) { return slots_[index]; }
  const Slot& at(uint32_t index) const { return slots_[index]; }
  size_t size() const { return index_.size(); }
  std::vector<Slot>& slots() { return slots_; }

 private:
  std::unordered_map<ScopeKey, uint32_t> index_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace egress::dispatcher
