#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "dispatcher/pacing/budget_store.h"

namespace egress::adapters {

// The arithmetic of a shared GCRA meter, for a budget store that cannot run it inside the store
// (DynamoDB: dynamodb_budget_backend.h reads the items, decides here, then writes them under a
// condition). It decides exactly as the Redis scripts (redis_budget_scripts.cc) and so as
// MemoryBudgetStore, in the scripts' unit: whole microseconds of the store's clock.

// One meter as the store holds it: its theoretical arrival time and its park (0: none).
struct SharedMeterState {
  int64_t tat_us = 0;
  int64_t parked_until_us = 0;
  pacing::ParkKind park = pacing::ParkKind::kNone;
};

// A take's decision: the answer, and for every charge the meter's new arrival time (or -1 when
// the charge leaves its meter as it was). A key charged twice gets the last charge's value.
struct SharedTake {
  pacing::TakeResult result;
  std::vector<int64_t> new_tat_us;
};

// The largest arrival time a meter holds (2^52 µs, about 142 years: exact in a double, the Redis
// scripts' number).
inline constexpr int64_t kMaxSharedTat = int64_t{1} << 52;

// An interval in whole microseconds, rounded up (never faster than the budget), at least 1.
int64_t IntervalMicros(const pacing::GcraParams& params);

// A wait in whole microseconds, rounded up, at least 0.
int64_t WaitMicros(pacing::Nanos wait);

// The park kind a shared store holds as a number (ParkKind's value); kNone for any other.
pacing::ParkKind ParkKindOf(int64_t value);

// As BudgetStore::TakeAll at `now_us` over `state` (one per charge, read together), with
// SharedBudgetBackend::TakeAll's reservation of units that conform within `ahead_us`.
SharedTake DecideSharedTake(std::span<const pacing::Charge> charges,
                            std::span<const SharedMeterState> state, int64_t now_us,
                            int64_t ahead_us);

// As BudgetStore::Rescale: the new arrival time, or -1 when the meter is left as it is.
int64_t RescaledTat(int64_t tat_us, const pacing::GcraParams& from, const pacing::GcraParams& to,
                    int64_t now_us);

// As BudgetStore::Sync: the arrival time that leaves `available` units.
int64_t SyncedTat(const pacing::GcraParams& params, int64_t available, int64_t now_us);

// As BudgetStore::Inspect; parked_until is a steady time of 0 plus the park's wait.
pacing::MeterView InspectSharedMeter(const SharedMeterState& state,
                                     const pacing::GcraParams& params, int64_t now_us);

}  // namespace egress::adapters
