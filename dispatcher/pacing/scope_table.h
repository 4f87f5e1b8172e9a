#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dispatcher/base/chunked_vector.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/budget_store.h"
#include "dispatcher/pacing/gcra_meter.h"
#include "dispatcher/pacing/wait_lanes.h"

namespace egress::pacing {

// The scheduler's side of each scope key in use: its effective budget, how many destinations
// share it, and the destinations waiting for it to refill (an intrusive FIFO through the
// scheduler's destination links, one per priority: WaitLanes). A slot lives while a destination
// references it; its index is stable until then. Not thread-safe: all methods run on the dispatcher
// loop.
//
// Memory: a 56-byte slot per key in chunked storage, plus a 4-byte-per-bucket open-addressing
// index (key → slot, at most half full). Budgets are interned: slots with equal budgets (every
// webhook of a tenant) share one entry, so a slot holds only its index.
class ScopeTable {
 public:
  static constexpr uint32_t kNil = UINT32_MAX;

  struct Slot {
    ScopeKey key = 0;
    int64_t armed_ns = INT64_MAX;  // the pending refill wake-up, INT64_MAX when none
    uint32_t refs = 0;
    uint32_t tenant = 0;  // the tenant whose overrides apply
    WaitLanes waiting;
    uint32_t timer_generation = 0;
    uint32_t budget : 25 = 0;  // index of the interned budget
    uint32_t name : 6 = 0;     // BudgetName (kMaxBudgetNames is 64)
    uint32_t learned : 1 = 0;  // budget came from response headers
  };

  // The slot of `key`, created with `budget` when new; adds one reference.
  static_assert(kMaxBudgetNames <= (1 << 6), "Slot::name holds a BudgetName in 6 bits");

  uint32_t Acquire(ScopeKey key, BudgetName name, uint32_t tenant, const Budget& budget);
  // The slot of `key` when one is in use, else kNil. Adds no reference.
  uint32_t Find(ScopeKey key) const;
  // Drops one reference; the slot is freed with the last one.
  void Release(uint32_t index);
  // Sets the effective budget (learned from headers when `learned`).
  void SetBudget(uint32_t index, const Budget& budget, bool learned);

  Slot& at(uint32_t index) { return slots_[index]; }
  const Slot& at(uint32_t index) const { return slots_[index]; }
  const Budget& budget(uint32_t index) const { return budgets_[slots_[index].budget].budget; }
  const GcraParams& params(uint32_t index) const { return budgets_[slots_[index].budget].params; }
  BudgetName name(uint32_t index) const { return static_cast<BudgetName>(slots_[index].name); }
  bool learned(uint32_t index) const { return slots_[index].learned != 0; }

  // Paces every budget interned from now on this fraction slower (see
  // SchedulerOptions::pacing_margin). Call before the first Acquire.
  void set_margin(double margin) { margin_ = margin; }

  // Keys in use.
  size_t size() const { return count_; }
  // One past the highest slot index ever used; free slots have refs == 0.
  uint32_t slot_limit() const { return static_cast<uint32_t>(slots_.size()); }

 private:
  struct BudgetEntry {
    Budget budget;
    GcraParams params;
    uint32_t refs = 0;
  };
  struct BudgetHash {
    size_t operator()(const Budget& budget) const;
  };

  // The bucket holding `key`, or the empty bucket where it would go.
  size_t FindBucket(ScopeKey key) const;
  void GrowIndex();
  void EraseFromIndex(ScopeKey key);
  uint32_t Intern(const Budget& budget);
  void Unintern(uint32_t index);

  ChunkedVector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> index_;  // slot indices, kNil when empty; size a power of two
  size_t count_ = 0;
  std::vector<BudgetEntry> budgets_;
  std::vector<uint32_t> free_budgets_;
  std::unordered_map<Budget, uint32_t, BudgetHash> budget_index_;
  double margin_ = 0;
};

}  // namespace egress::pacing
