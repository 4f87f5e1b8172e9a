#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/delivery.h"

namespace egress::storage {

// A delivery handed out (in_flight) by the RocksDB store without a write: the record and index
// entries on disk still say what they said before the lease. A crash loses the lease, and the
// delivery is found waiting again, which is what recovery would have made of an in_flight one.
struct Lease {
  Delivery delivery;  // as handed out: state in_flight
  // What the disk says of it: a waiting state and its due time (the due index entry).
  DeliveryState disk_state = DeliveryState::kQueued;
  int64_t disk_next_attempt_ms = 0;
  // The size of the record on disk, as QueueStore::TenantStoredBytes counts it (the leased
  // version's differs): what the outcome's write replaces.
  uint64_t disk_bytes = 0;

  // `delivery` with the disk's state and due time: what every index entry and counter on disk
  // was derived from (the fields the indexes use are right; reason and history are the lease's).
  Delivery DiskVersion() const;
};

// The store's leases by id. Thread-safe; the store changes an id's lease only under that id's
// stripe lock, so a lease seen by a writer holding the lock stays until it changes it.
class LeaseTable {
 public:
  // A copy of the lease of `id`, if any.
  std::optional<Lease> Find(std::string_view id) const;
  // A copy of the leased delivery with `id`, if any.
  std::optional<Delivery> FindDelivery(std::string_view id) const;
  bool Contains(std::string_view id) const;
  // Applies one write's lease changes together: a value puts the lease, nullopt drops it.
  void Update(std::vector<std::pair<std::string, std::optional<Lease>>>&& changes);
  // Calls `visit` with each leased delivery whose id is not less than `from_id`, in id order,
  // until it returns false. Holds the table's lock meanwhile: `visit` must not call back.
  void Visit(std::string_view from_id, const std::function<bool(const Delivery&)>& visit) const;
  size_t size() const;
  void Clear();

 private:
  mutable std::mutex mu_;
  std::map<std::string, Lease, std::less<>> leases_;
};

}  // namespace egress::storage
