#include "storage/lease_table.h"

namespace egress::storage {

Delivery Lease::DiskVersion() const {
  Delivery d = delivery;
  d.state = disk_state;
  d.next_attempt_ms = disk_next_attempt_ms;
  return d;
}

std::optional<Lease> LeaseTable::Find(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(id);
  if (it == leases_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<Delivery> LeaseTable::FindDelivery(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(id);
  if (it == leases_.end()) {
    return std::nullopt;
  }
  return it->second.delivery;
}

bool LeaseTable::Contains(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return leases_.find(id) != leases_.end();
}

void LeaseTable::Update(std::vector<std::pair<std::string, std::optional<Lease>>>&& changes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, lease] : changes) {
    if (lease) {
      leases_.insert_or_assign(std::move(id), std::move(*lease));
    } else {
      leases_.erase(id);
    }
  }
}

void LeaseTable::Visit(std::string_view from_id,
                       const std::function<bool(const Delivery&)>& visit) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = leases_.lower_bound(from_id); it != leases_.end(); ++it) {
    if (!visit(it->second.delivery)) {
      return;
    }
  }
}

size_t LeaseTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leases_.size();
}

void LeaseTable::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  leases_.clear();
}

}  // namespace egress::storage
