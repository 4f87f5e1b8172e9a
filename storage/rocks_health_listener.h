#pragma once

// Follows RocksDB's background errors for the RocksDB store. Included only by storage/rocks_*.cc.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include <rocksdb/listener.h>

#include "storage/queue_store.h"

namespace egress::storage {

// Registered on the store's database: an error RocksDB calls hard or worse (it stops taking
// writes: a failed write-ahead-log write, a failed flush, a full disk) makes the store
// unhealthy; softer ones (a compaction that found no space, which RocksDB retries by itself)
// leave it alone. RocksDB's own recovery is switched off (OnErrorRecoveryBegin): on a small
// disk it waits for free space the size of a write buffer (64 MiB), and while it waits a manual
// Resume is refused, so the store's owner drives recovery (QueueStore::Recover) instead.
// Callbacks run on RocksDB's threads, the rest on any thread. Thread-safe.
class HealthListener final : public rocksdb::EventListener {
 public:
  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override;
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason reason, rocksdb::Status error,
                            bool* auto_recovery) override;

  // A fault of the store's own (its database could not be reopened): unhealthy.
  void Fail(std::string reason, std::string during, std::string detail);
  // Healthy again, unless an error arrived after generation() returned `since`.
  void Clear(uint64_t since);

  bool healthy() const { return healthy_.load(std::memory_order_acquire); }
  StoreHealth Get() const;
  // Counts the errors recorded so far.
  uint64_t generation() const;

 private:
  mutable std::mutex mu_;
  StoreHealth health_;
  uint64_t generation_ = 0;
  std::atomic<bool> healthy_{true};
};

// The StoreHealth reason token of a RocksDB status: "no_space", "space_limit", "io_error",
// "corruption" or "error".
std::string HealthReasonOf(const rocksdb::Status& s);

}  // namespace egress::storage
