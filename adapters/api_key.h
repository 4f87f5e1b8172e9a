#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress::adapters {

// Tenant API keys (docs/api.md, "Authentication"): a client presents the key itself
// (Authorization: Bearer <key>); the service keeps only its SHA-256 digest. Here, below the
// config and the service, so that both read keys the same way.

// Bytes of a digest (SHA-256).
inline constexpr size_t kApiKeyDigestBytes = 32;
// A key is 16 to 256 bytes of visible ASCII (0x21-0x7E): long enough not to be guessed, short
// enough for any header.
inline constexpr size_t kMinApiKeyBytes = 16;
inline constexpr size_t kMaxApiKeyBytes = 256;

// The SHA-256 digest of `key`, kApiKeyDigestBytes raw bytes. Pure; safe from any thread.
std::string ApiKeyDigest(std::string_view key);

// One configured or registered entry: the key itself, or "sha256:" and the 64 hex digits of its
// digest (either case). Returns the digest. InvalidArgument saying what is wrong and never
// echoing the entry (a key is a secret): empty, too short or long, a byte that is not visible
// ASCII, or a sha256: form that is not 64 hex digits.
Result<std::string> ParseApiKeyEntry(std::string_view entry);

// A digest as "sha256:<64 lowercase hex digits>", the form ParseApiKeyEntry reads back.
std::string ApiKeyDigestText(std::string_view digest);

}  // namespace egress::adapters
