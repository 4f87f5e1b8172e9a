#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <rocksdb/db.h>

#include "dispatcher/base/result.h"
#include "storage/counter_deltas.h"
#include "storage/queue_store.h"

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
  void Apply(const CounterDeltas& deltas) { Apply({&deltas}); }
  // Several sets of deltas under one hold of the lock, so no read sees some and not the others
  // (a write's durable and in-memory moves: between the two, a delivery leased in memory and
  // written deferred on disk counted in both states).
  void Apply(std::initializer_list<const CounterDeltas*> deltas);
  // 0 for a counter never written.
  int64_t Get(std::string_view key) const;
  // Entries held: one per counter not at 0, except a destination's, which share one while any
  // of them is not at 0.
  size_t entries() const;
  // The destination counters (destcount/ keys) summed per (tenant, platform), the negative ones
  // read as 0, ordered by tenant then platform; kept as the counters change, so the copy is all
  // a read costs (one entry per group, not per destination and state). Copied 512 groups per
  // hold of the lock, let go between holds; each group is read as it was when its hold copied
  // it. The lock is not fair: taken again at once, it is rarely won by a write woken meanwhile,
  // so a write may still wait for much of the copy (letting waiting writes in first changed
  // nothing measurable: bench/README.md, section 12).
  std::vector<GroupCounts> Groups() const;
  // The groups of one tenant, by platform.
  std::vector<GroupCounts> GroupsOf(std::string_view tenant) const;

 private:
  // Moves the group of `key` (when it is a destination counter) from `before` to `after`.
  void MoveGroup(std::string_view key, int64_t before, int64_t after);
  // The counter of `key`, created at 0 when absent: a destination counter's slot in dest_values_
  // (`dest` then names its entry), any other's in values_.
  int64_t& Slot(std::string_view key, std::string_view& dest);
  // Drops the entry of a counter that reached 0 (its destination's when all of its states did).
  void Drop(std::string_view key, std::string_view dest);

  struct GroupOrder {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      const std::string_view a_tenant(a.first), b_tenant(b.first);
      return a_tenant != b_tenant ? a_tenant < b_tenant
                                  : std::string_view(a.second) < std::string_view(b.second);
    }
  };
  using GroupKey = std::pair<std::string, std::string>;  // (tenant, platform)

  // A destination's counters of the waiting states (queued, in flight, deferred: index
  // state - 1), the only ones the store keeps per destination.
  using DestCounts = std::array<int64_t, 3>;

  mutable std::mutex mu_;
  CounterMap values_;  // every counter but the destinations'
  // The destination counters of the waiting states (destcount/<state>/<destination key>), one
  // entry per destination with its states side by side: a destination with work has two or three
  // at once, and one entry holding its key once takes about 130 bytes where one per state took
  // about 290 (100,000 parked destinations: 16 MiB less). Any other destcount/ key (a terminal
  // state's, never written) is kept in values_.
  std::unordered_map<std::string, DestCounts, StringViewHash, std::equal_to<>> dest_values_;
  std::map<GroupKey, StateCounts, GroupOrder> groups_;
};

}  // namespace egress::storage
