#include "dispatcher/service/credential_book.h"

namespace egress::service {

void CredentialBook::PutIn(Layer& layer, const std::string& tenant,
                           adapters::Credential credential) {
  std::string name = credential.name;
  layer[{tenant, std::move(name)}] = std::move(credential);
}

bool CredentialBook::HasTenantIn(const Layer& layer, const std::string& tenant) {
  auto it = layer.lower_bound({tenant, std::string()});
  return it != layer.end() && it->first.first == tenant;
}

void CredentialBook::Put(const std::string& tenant, adapters::Credential credential) {
  std::lock_guard<std::mutex> lock(mu_);
  PutIn(config_, tenant, std::move(credential));
}

void CredentialBook::PutAll(std::vector<std::pair<std::string, adapters::Credential>> credentials) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [tenant, credential] : credentials) {
    PutIn(config_, tenant, std::move(credential));
  }
}

void CredentialBook::Register(const std::string& tenant, adapters::Credential credential) {
  std::lock_guard<std::mutex> lock(mu_);
  PutIn(registered_, tenant, std::move(credential));
}

void CredentialBook::ReplaceRegistered(
    std::vector<std::pair<std::string, adapters::Credential>> registered) {
  Layer fresh;
  for (auto& [tenant, credential] : registered) {
    PutIn(fresh, tenant, std::move(credential));
  }
  std::lock_guard<std::mutex> lock(mu_);
  registered_.swap(fresh);
}

std::optional<adapters::Credential> CredentialBook::Find(const std::string& tenant,
                                                         const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Layer* layer : {&registered_, &config_}) {
    if (auto it = layer->find({tenant, name}); it != layer->end()) {
      return it->second;
    }
  }
  return std::nullopt;
}

bool CredentialBook::HasTenant(const std::string& tenant) const {
  std::lock_guard<std::mutex> lock(mu_);
  return HasTenantIn(registered_, tenant) || HasTenantIn(config_, tenant);
}

}  // namespace egress::service
