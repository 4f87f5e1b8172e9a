#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "storage/string_view_hash.h"

namespace egress::storage {

// Encoded records of waiting deliveries (queued, deferred) as last written, so that reading one
// back (the lease that follows its enqueue) is a lookup instead of a RocksDB read. The store
// updates it after every write that succeeded, for each record that write touched; it holds
// nothing the disk does not. Bounded by the heap its entries take (records, ids, hash nodes,
// the allocator's headers): when full it takes no more until deliveries leave (the oldest,
// which are leased first, stay). Thread-safe.
class RecordCache {
 public:
  explicit RecordCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The encoded record of `id`, if cached.
  std::optional<std::string> Find(std::string_view id) const;
  // Applies one write's changes: a value caches (or replaces) the record, nullopt drops it.
  void Update(std::vector<std::pair<std::string, std::optional<std::string>>>&& changes);
  // Drops every record (the disk may have changed under it: a reopen after a write fault).
  void Clear();
  // The heap the entries take, as counted against the cap.
  size_t bytes() const;
  size_t size() const;

 private:
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string, StringViewHash, std::equal_to<>> records_;
  size_t bytes_ = 0;
};

}  // namespace egress::storage
