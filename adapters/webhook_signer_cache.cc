#include "adapters/webhook_signer_cache.h"

#include <functional>
#include <string_view>
#include <utility>

#include "adapters/webhook_signature.h"

namespace egress::adapters {
namespace {

Result<std::shared_ptr<const WebhookSigner>> MakeSigner(const Credential& credential) {
  if (credential.secrets.empty()) {
    return Status::FailedPrecondition("webhook credential '" + credential.name +
                                      "' has no signing secret");
  }
  std::vector<WebhookKey> keys;
  keys.reserve(credential.secrets.size());
  for (size_t i = 0; i < credential.secrets.size(); ++i) {
    Result<WebhookKey> key = ParseWebhookSecret(credential.secrets[i]);
    if (!key.has_value()) {
      return Status::FailedPrecondition("webhook credential '" + credential.name + "' secret #" +
                                        std::to_string(i + 1) + ": " + key.error().message());
    }
    keys.push_back(std::move(*key));
  }
  return std::make_shared<const WebhookSigner>(keys);
}

}  // namespace

size_t WebhookSignerCache::SecretsHash::operator()(const std::vector<std::string>& secrets) const {
  size_t h = secrets.size();
  for (const std::string& s : secrets) {
    h = h * 31 + std::hash<std::string_view>()(s);
  }
  return h;
}

Result<std::shared_ptr<const WebhookSigner>> WebhookSignerCache::For(
    const Credential& credential) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = signers_.find(credential.secrets); it != signers_.end()) {
      return it->second;
    }
  }
  Result<std::shared_ptr<const WebhookSigner>> signer = MakeSigner(credential);
  if (!signer.has_value()) {
    return signer;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (signers_.size() >= kMaxEntries) {
    signers_.clear();
  }
  signers_.emplace(credential.secrets, *signer);
  return signer;
}

}  // namespace egress::adapters
