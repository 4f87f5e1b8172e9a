#pragma once

#include <cstdint>
#include <string>

#include "dispatcher/pacing/sliding_window_counter.h"
#include "storage/queue_store.h"

namespace egress::service {

// Where a tenant's quota counts are read from: the slices of its sliding window, as charged by
// the stored deliveries. The charges themselves travel with the deliveries
// (storage::NewDelivery::charges): the store adds, refunds and corrects them in the same write as
// each state change, so a count is exactly as durable as the deliveries it counts.
//
// StoreQuotaLedger reads the local store's counts. A ledger shared by several services (the
// [cluster] budget store) is a second implementation that is fed the same slice deltas;
// docs/costs.md, "Where the counts live". Loop thread only.
class QuotaLedger {
 public:
  virtual ~QuotaLedger() = default;
  // The slices of `tenant`'s quota `quota` still counting at `now_ms` (Unix ms). No I/O.
  virtual pacing::SlidingWindowCounter Usage(const std::string& tenant, const std::string& quota,
                                             int64_t now_ms) = 0;
};

// The counts of one store (QueueStore::QuotaUsage). `store` must outlive the ledger.
class StoreQuotaLedger final : public QuotaLedger {
 public:
  explicit StoreQuotaLedger(storage::QueueStore& store) : store_(store) {}
  pacing::SlidingWindowCounter Usage(const std::string& tenant, const std::string& quota,
                                     int64_t now_ms) override {
    return store_.QuotaUsage(tenant, quota, now_ms);
  }

 private:
  storage::QueueStore& store_;
};

}  // namespace egress::service
