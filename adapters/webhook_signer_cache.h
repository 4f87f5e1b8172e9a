#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/platform_adapter.h"
#include "adapters/webhook_signer.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

// WebhookSigners by the credential secrets they were made from, so that the secrets are decoded
// and their HMAC keys prepared once, not on every request. A credential whose secrets change
// (a rotation) finds a new entry; when kMaxEntries are held, all are dropped and rebuilt as
// used. Failures are not kept.
//
// Thread-safe (a mutex around the map). The entries hold key material: never log them.
class WebhookSignerCache {
 public:
  static constexpr size_t kMaxEntries = 1024;

  // The signer for `credential.secrets`. FailedPrecondition, naming the credential, when it has
  // no secrets or one is not a valid "whsec_" secret.
  Result<std::shared_ptr<const WebhookSigner>> For(const Credential& credential) const;

 private:
  struct SecretsHash {
    size_t operator()(const std::vector<std::string>& secrets) const;
  };

  mutable std::mutex mu_;
  mutable std::unordered_map<std::vector<std::string>, std::shared_ptr<const WebhookSigner>,
                             SecretsHash>
      signers_;
};

}  // namespace egress::adapters
