#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dispatcher/pacing/budget_store.h"

namespace egress::pacing {

// BudgetStore in process memory. Never fails. Not thread-safe: all methods run on the dispatcher
// loop.
//
// Meters are one open-addressing table of (key, theoretical arrival time), 16 bytes a slot with
// no per-key allocation, probed once per charge; parks, which are rare and short-lived, sit in a
// separate map that TakeAll skips entirely while it is empty. Key 0 is stored as another fixed
// key (a collision, which only makes pacing stricter; see ScopeKey).
class MemoryBudgetStore final : public BudgetStore {
 public:
  MemoryBudgetStore() = default;

  Result<TakeResult> TakeAll(std::span<const Charge> charges, SteadyTime now) override;
  Status Park(ScopeKey key, SteadyTime until, ParkKind kind) override;
  Status Unpark(ScopeKey key) override;
  Status Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to,
                 SteadyTime now) override;
  Status Sync(ScopeKey key, const GcraParams& params, int64_t available, SteadyTime now) override;
  Result<MeterView> Inspect(ScopeKey key, const GcraParams& params, SteadyTime now) override;
  size_t Sweep(SteadyTime now) override;

  // Keys currently held (with a meter, a park, or both).
  size_t size() const;

 private:
  struct Meter {
    ScopeKey key = 0;  // 0: empty slot
    int64_t tat_ns = 0;
  };
  struct ParkEntry {
    int64_t until_ns = 0;
    ParkKind kind = ParkKind::kNone;
  };

  // The slot holding `key`, or the empty slot where it would go. `key` must not be 0.
  size_t Probe(ScopeKey key) const;
  // The meter of `key`, inserted (fresh) when missing. May grow the table.
  Meter& Insert(ScopeKey key);
  void Rehash(size_t capacity);

  // Fills `result` with the denial of charge `index` when it is parked at `now_ns`.
  bool DeniedByPark(ScopeKey key, size_t index, int64_t now_ns, TakeResult& result) const;

  std::vector<Meter> meters_;  // capacity a power of two, or empty
  size_t meter_count_ = 0;
  std::unordered_map<ScopeKey, ParkEntry> parks_;
};

}  // namespace egress::pacing
