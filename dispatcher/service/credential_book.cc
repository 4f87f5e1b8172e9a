#include "dispatcher/service/credential_book.h"

namespace egress::service {

void CredentialBook::Put(const std::string& tenant, adapters::Credential credential) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string name = credential.name;
  credentials_[{tenant, std::move(name)}] = std::move(credential);
}

void CredentialBook::PutAll(std::vector<std::pair<std::string, adapters::Credential>> credentials) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [tenant, credential] : credentials) {
    std::string name = credential.name;
    credentials_[{tenant, std::move(name)}] = std::move(credential);
  }
}

std::optional<adapters::Credential> CredentialBook::Find(const std::string& tenant,
                                                         const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = credentials_.find({tenant, name});
  if (it == credentials_.end()) {
    return std::nullopt;
  }
  return it->second;
}

bool CredentialBook::HasTenant(const std::string& tenant) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = credentials_.lower_bound({tenant, std::string()});
  return it != credentials_.end() && it->first.first == tenant;
}

}  // namespace egress::service
