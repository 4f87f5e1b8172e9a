#include "dispatcher/service/api/tenant_request_slots.h"

namespace egress::service {

std::shared_ptr<void> TenantRequestSlots::TryTake(const std::string& tenant) {
  auto [it, fresh] = counts_->try_emplace(tenant, 0);
  if (it->second >= per_tenant_) {
    return nullptr;
  }
  ++it->second;
  // The handle points at the count's key; unordered_map keeps node addresses stable.
  std::weak_ptr<Counts> counts = counts_;
  return std::shared_ptr<void>(const_cast<std::string*>(&it->first), [counts](void* key) {
    if (auto c = counts.lock()) {
      auto found = c->find(*static_cast<const std::string*>(key));
      if (found != c->end() && --found->second == 0) {
        c->erase(found);
      }
    }
  });
}

size_t TenantRequestSlots::in_flight(const std::string& tenant) const {
  auto it = counts_->find(tenant);
  return it == counts_->end() ? 0 : it->second;
}

}  // namespace egress::service
