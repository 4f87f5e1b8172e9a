#pragma once

#include <unordered_map>

#include "dispatcher/budget_store.h"

namespace egress::dispatcher {

// BudgetStore in process memory: one theoretical-arrival time and one park per key. Never fails.
// Not thread-safe: all methods run on the dispatcher loop.
class MemoryBudgetStore final : public BudgetStore {
 public:
  MemoryBudgetStore() = default;

  Result<TakeResult> TakeAll(std::span<const Charge> charges, SteadyTime now) override;
  Status Park(ScopeKey key, SteadyTime until, ParkKind kind) override;
  Status Unpark(ScopeKey key) override;
  Result<MeterView> Inspect(ScopeKey key, const GcraParams& params, SteadyTime now) override;
  size_t Sweep(SteadyTime now) override;

  // Keys currently held.
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    int64_t tat_ns = 0;
    int64_t parked_until_ns = 0;
    ParkKind park = ParkKind::kNone;
  };

  // Fills `result` with the denial of charge `index` when it is parked at `now_ns`.
  bool DeniedByPark(const Charge& charge, size_t index, int64_t now_ns, TakeResult& result) const;

  std::unordered_map<ScopeKey, Entry> entries_;
};

}  // namespace egress::dispatcher
