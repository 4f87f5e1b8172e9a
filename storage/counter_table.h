#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include <rocksdb/db.h>

#include "dispatcher/base/result.h"
#include "storage/counter_deltas.h"

namespace egress::storage {

// The store's exact counters (per state, per tenant backlog and stored bytes, per destination and
// state), kept
// in memory beside their durable copy in the meta column family. Loaded once on open; every
// committed write applies its deltas, and the store's in-memory leases apply theirs here only
// (so the table counts what readers see; the durable copy counts what the disk holds). Reads never
// touch RocksDB, so they do not pay for the merge operands a hot counter piles up in the memtable.
// Thread-safe.
class CounterTable {
 public:
  // Reads every counter (count/, backlog/, destcount/, storedbytes/ keys) from `meta`.
  Status Load(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* meta);
  void Apply(const CounterDeltas& deltas);
  // 0 for a counter never written.
  int64_t Get(std::string_view key) const;
  // Calls `fn(key, value)` for every counter whose key starts with `prefix` and is not 0, in no
  // particular order, under the table's lock (`fn` must not call back into the table).
  template <class Fn>
  void ForEachWithPrefix(std::string_view prefix, Fn&& fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, value] : values_) {
      if (std::string_view(key).starts_with(prefix)) {
        fn(std::string_view(key), value);
      }
    }
  }

 private:
  mutable std::mutex mu_;
  CounterMap values_;
};

}  // namespace egress::storage
