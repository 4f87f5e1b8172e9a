#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>

namespace egress::service {

// Counts each tenant's intake requests waiting for their write, and refuses one over the cap, so
// one tenant's flood of concurrent requests cannot fill the storage threads' queue ahead of
// everyone else's (server.tenant_max_requests_in_flight). Only tenants with a request in flight
// are held. Loop thread only.
class TenantRequestSlots {
 public:
  explicit TenantRequestSlots(size_t per_tenant) : per_tenant_(per_tenant > 0 ? per_tenant : 1) {}

  // A slot for one request of `tenant`, given back when the last copy of the returned handle is
  // destroyed (it may outlive this object); nullptr when the tenant is at the cap.
  std::shared_ptr<void> TryTake(const std::string& tenant);
  // The tenant's requests in flight now.
  size_t in_flight(const std::string& tenant) const;
  size_t per_tenant() const { return per_tenant_; }

 private:
  using Counts = std::unordered_map<std::string, size_t>;
  const size_t per_tenant_;
  std::shared_ptr<Counts> counts_ = std::make_shared<Counts>();
};

}  // namespace egress::service
