#include "dispatcher/service/api_key_book.h"

#include <set>

#include <openssl/crypto.h>

namespace egress::service {

Status ApiKeyBook::Replace(const std::string& tenant, const std::vector<std::string>& digests) {
  for (const std::string& digest : digests) {
    auto it = tenant_of_.find(digest);
    if (it != tenant_of_.end() && it->second != tenant) {
      return Status::FailedPrecondition(
          "a key belongs to one tenant only: one of these keys is "
          "already another tenant's");
    }
  }
  if (auto old = digests_of_.find(tenant); old != digests_of_.end()) {
    for (const std::string& digest : old->second) {
      tenant_of_.erase(digest);
    }
    digests_of_.erase(old);
  }
  if (digests.empty()) {
    return Status::Ok();
  }
  const std::set<std::string> unique(digests.begin(), digests.end());
  for (const std::string& digest : unique) {
    tenant_of_[digest] = tenant;
  }
  digests_of_[tenant] = std::vector<std::string>(unique.begin(), unique.end());
  return Status::Ok();
}

Status ApiKeyBook::ReplaceAll(const std::map<std::string, std::vector<std::string>>& by_tenant) {
  std::unordered_map<std::string, std::string> tenant_of;
  std::map<std::string, std::vector<std::string>> digests_of;
  for (const auto& [tenant, digests] : by_tenant) {
    if (digests.empty()) {
      continue;
    }
    const std::set<std::string> unique(digests.begin(), digests.end());
    for (const std::string& digest : unique) {
      auto [it, added] = tenant_of.emplace(digest, tenant);
      if (!added) {
        return Status::FailedPrecondition("tenants " + it->second + " and " + tenant +
                                          " have a key in common; a key belongs to one tenant "
                                          "only");
      }
    }
    digests_of[tenant] = std::vector<std::string>(unique.begin(), unique.end());
  }
  tenant_of_.swap(tenant_of);
  digests_of_.swap(digests_of);
  return Status::Ok();
}

std::vector<std::string> ApiKeyBook::DigestsOf(const std::string& tenant) const {
  auto it = digests_of_.find(tenant);
  return it == digests_of_.end() ? std::vector<std::string>() : it->second;
}

std::optional<std::string> ApiKeyBook::TenantOf(std::string_view digest) const {
  auto it = tenant_of_.find(std::string(digest));
  if (it == tenant_of_.end() || it->first.size() != digest.size() ||
      CRYPTO_memcmp(it->first.data(), digest.data(), digest.size()) != 0) {
    return std::nullopt;
  }
  return it->second;
}

size_t ApiKeyBook::CountOf(const std::string& tenant) const {
  auto it = digests_of_.find(tenant);
  return it == digests_of_.end() ? 0 : it->second.size();
}

}  // namespace egress::service
