#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/platform_adapter.h"

namespace egress::service {

// The tenants' credentials by (tenant, name): from the config, and registered at runtime by the
// admin API. Thread-safe. Secrets never leave through here except to the adapters.
class CredentialBook {
 public:
  void Put(const std::string& tenant, adapters::Credential credential);
  // Puts all of `credentials` (tenant, credential) under one lock: readers see all or none.
  void PutAll(std::vector<std::pair<std::string, adapters::Credential>> credentials);
  std::optional<adapters::Credential> Find(const std::string& tenant,
                                           const std::string& name) const;
  // True when the tenant has at least one credential: a tenant the deployment knows.
  bool HasTenant(const std::string& tenant) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, adapters::Credential> credentials_;
};

}  // namespace egress::service
