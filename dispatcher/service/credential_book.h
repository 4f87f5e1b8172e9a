#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/platform_adapter.h"

namespace egress::service {

// The tenants' credentials by (tenant, name), in two layers: the config's, and those registered
// at run time through the admin API (the store's "credentials/" settings), which go over a
// config credential of the same (tenant, name). Thread-safe. Secrets never leave through here
// except to the adapters.
class CredentialBook {
 public:
  // A credential of the config (at start; again on SIGHUP).
  void Put(const std::string& tenant, adapters::Credential credential);
  // Puts all of `credentials` (tenant, credential) of the config under one lock: readers see all
  // or none.
  void PutAll(std::vector<std::pair<std::string, adapters::Credential>> credentials);
  // A credential registered through the admin API.
  void Register(const std::string& tenant, adapters::Credential credential);
  // Replaces every registered credential with `registered` (tenant, credential) under one lock:
  // one that is not there any more is gone (a config credential of its name is found again);
  // the config's stay.
  void ReplaceRegistered(std::vector<std::pair<std::string, adapters::Credential>> registered);
  // The registered one, else the config's.
  std::optional<adapters::Credential> Find(const std::string& tenant,
                                           const std::string& name) const;
  // True when the tenant has at least one credential: a tenant the deployment knows.
  bool HasTenant(const std::string& tenant) const;

 private:
  using Layer = std::map<std::pair<std::string, std::string>, adapters::Credential>;
  static void PutIn(Layer& layer, const std::string& tenant, adapters::Credential credential);
  static bool HasTenantIn(const Layer& layer, const std::string& tenant);

  mutable std::mutex mu_;
  Layer config_;
  Layer registered_;
};

}  // namespace egress::service
