#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dispatcher/base/status.h"

namespace egress::service {

// The tenants' API keys, as SHA-256 digests (adapters/api_key.h): from the config, and replaced
// at run time by the admin API. A digest belongs to one tenant only. Never holds a key itself.
// Not thread-safe: every method runs on the service's loop.
class ApiKeyBook {
 public:
  // Replaces the tenant's keys with `digests` (empty: the tenant has none). FailedPrecondition
  // when one of them is another tenant's key, naming neither key; nothing changes then.
  Status Replace(const std::string& tenant, const std::vector<std::string>& digests);
  // Replaces every tenant's keys with `by_tenant` (a tenant not in it has none).
  // FailedPrecondition naming the two tenants when they share a digest (naming no key); nothing
  // changes then.
  Status ReplaceAll(const std::map<std::string, std::vector<std::string>>& by_tenant);
  // The tenant whose key has `digest`; nullopt when none. The lookup is by a hash of the digest
  // and the final comparison constant in time (CRYPTO_memcmp), so timing tells nothing of a key.
  std::optional<std::string> TenantOf(std::string_view digest) const;
  // The tenant's digests, sorted (empty: none).
  std::vector<std::string> DigestsOf(const std::string& tenant) const;
  // How many keys the tenant has.
  size_t CountOf(const std::string& tenant) const;
  size_t size() const { return tenant_of_.size(); }

 private:
  std::unordered_map<std::string, std::string> tenant_of_;      // digest -> tenant
  std::map<std::string, std::vector<std::string>> digests_of_;  // tenant -> digests
};

}  // namespace egress::service
