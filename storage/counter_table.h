#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <rocksdb/db.h>

#include "dispatcher/result.h"

namespace egress::storage {

// Counter changes of one write, netted per key (a -1 and a +1 on one key cancel out), in no
// particular order.
class CounterDeltas {
 public:
  void Add(std::string key, int64_t delta) { deltas_[std::move(key)] += delta; }
  const std::unordered_map<std::string, int64_t>& deltas() const { return deltas_; }

 private:
  std::unordered_map<std::string, int64_t> deltas_;
};

// The store's exact counters (per state, per tenant backlog, per destination and state), kept
// in memory beside their durable copy in the meta column family. Loaded once on open; every
// committed write applies its deltas, and the store's in-memory leases apply theirs here only
// (so the table counts what readers see; the durable copy counts what the disk holds). Reads never touch RocksDB, so they do not pay for the
// merge operands a hot counter piles up in the memtable. Thread-safe.
class CounterTable {
 public:
  // Reads every counter (count/, backlog/, destcount/ keys) from `meta`.
  Status Load(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* meta);
  void Apply(const CounterDeltas& deltas);
  // 0 for a counter never written.
  int64_t Get(std::string_view key) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, int64_t> values_;
};

}  // namespace egress::storage
