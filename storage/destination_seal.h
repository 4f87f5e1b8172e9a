#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"
#include "storage/secrets_key.h"

namespace egress::storage {

// Destinations that are themselves secrets (a Discord webhook URL with its token, a Slack
// incoming-webhook path, a URL with userinfo or query values: whatever RedactText would hide)
// are kept sealed at rest (docs/storage.md, "Sealed destinations"): in the delivery record and
// in the keys of the destination index and counters. The seal is deterministic, so one
// destination has one stored form and its index, ordering and counters work on it unchanged:
// AES-256-GCM under a key derived from the secrets key, with a synthetic nonce (an HMAC-SHA256
// of the destination under a second derived key, as in SIV); equal destinations show as equal,
// nothing else is revealed. The stored form is kSealedPrefix followed by the hex of
// nonce | ciphertext | tag: printable, without the separators of a destination key.
// Destinations without a secret are stored as they are. Thread-safe (immutable after
// construction).
inline constexpr std::string_view kSealedDestinationPrefix = "~sealed1:";

class DestinationSeal {
 public:
  // Without a key nothing is sealed, and a sealed destination read is FailedPrecondition.
  explicit DestinationSeal(const std::optional<SecretsKey>& key);

  // True when `destination` must be sealed at rest: it holds a secret, or looks like a sealed
  // one (so the stored form is never ambiguous).
  static bool HoldsSecret(std::string_view destination);
  bool has_key() const { return has_key_; }

  // The stored form of a destination: sealed when it holds a secret and a key is set.
  std::string Stored(std::string_view destination) const;
  // The destination a stored form stands for; Corruption when a sealed one does not open.
  Result<std::string> Open(std::string_view stored) const;

  // The same for a destination key (platform, tenant, credential and destination joined by
  // 0x1f): only the destination part changes. A text that is not a destination key is
  // returned as it is.
  std::string StoredKey(std::string_view destination_key) const;
  Result<std::string> OpenKey(std::string_view stored_key) const;

 private:
  bool has_key_ = false;
  unsigned char enc_key_[32] = {};
  unsigned char nonce_key_[32] = {};
};

}  // namespace egress::storage
