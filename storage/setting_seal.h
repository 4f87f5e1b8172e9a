#pragma once

#include <string>
#include <string_view>

#include "dispatcher/base/result.h"
#include "storage/secrets_key.h"

namespace egress::storage {

// Sealing of settings that hold secrets (registered credentials, API-key hashes) at rest
// (docs/storage.md, "Sealed settings"): AES-256-GCM through OpenSSL's EVP interface, a fresh
// random 96-bit nonce per record, the setting's key as associated data (a sealed value moved to
// another key does not open). A sealed value is
//   version (1 byte, kSealVersion) | nonce (12 bytes) | ciphertext | tag (16 bytes).
// Plaintext settings are JSON and never start with the version byte. Pure; thread-safe.
inline constexpr char kSealVersion = '\x01';

bool IsSealed(std::string_view value);

// IoError only when OpenSSL fails (no random bytes).
Result<std::string> SealSetting(const SecretsKey& key, std::string_view setting_key,
                                std::string_view plaintext);

// Corruption when the value does not open with `key` under `setting_key` (a wrong key, a record
// altered or moved), or has an unknown version: the message names the setting key (with its
// separators visible), never the value.
Result<std::string> OpenSetting(const SecretsKey& key, std::string_view setting_key,
                                std::string_view sealed);

}  // namespace egress::storage
