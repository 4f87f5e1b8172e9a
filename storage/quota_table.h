#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"
#include "dispatcher/pacing/sliding_window_counter.h"
#include "storage/counter_deltas.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
}  // namespace rocksdb

namespace egress::storage {

// The quota slices (meta keys quota/..., index_keys.h) in memory, per tenant's quota: what the
// stored deliveries charged, as sliding window counters. Loaded once on open (and again after a
// reopen); every committed write applies its quota deltas. Reads prune what stopped counting, so
// memory follows the slices still counted. Thread-safe.
class QuotaTable {
 public:
  // Reads every quota slice from `meta`. A key that does not parse is skipped.
  Status Load(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* meta);
  // Replaces every slice with `slices` (QuotaSliceKey -> units): what a store that keeps its
  // counters elsewhere (the PostgreSQL one) read. A key that does not parse is skipped.
  void Reset(const CounterMap& slices);
  // Applies counter deltas keyed by QuotaSliceKey; other keys are ignored.
  void Apply(const CounterDeltas& deltas);
  // The slices of the tenant's quota still counting at `now_ms` (empty for one never charged).
  pacing::SlidingWindowCounter Get(std::string_view tenant, std::string_view quota, int64_t now_ms);

 private:
  std::mutex mu_;
  std::map<std::string, pacing::SlidingWindowCounter, std::less<>> quotas_;
};

}  // namespace egress::storage
