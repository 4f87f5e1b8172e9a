#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace egress::storage {

// AES-256-GCM through OpenSSL's EVP interface, the one cipher of what is sealed at rest
// (setting_seal.h, destination_seal.h). Pure; thread-safe.
inline constexpr size_t kAesGcmKeyBytes = 32;
inline constexpr size_t kAesGcmNonceBytes = 12;
inline constexpr size_t kAesGcmTagBytes = 16;

// Appends ciphertext | tag of `plaintext` to `out`, with `aad` as associated data. False when
// OpenSSL fails (then `out` is unspecified). `out` must not hold the bytes `nonce`, `aad` or
// `plaintext` view: it grows.
bool AesGcmSeal(const uint8_t* key, std::string_view nonce, std::string_view aad,
                std::string_view plaintext, std::string& out);

// The plaintext of `body` (ciphertext | tag); nullopt when it does not open (a different key,
// nonce or associated data, an altered body, or one shorter than a tag).
std::optional<std::string> AesGcmOpen(const uint8_t* key, std::string_view nonce,
                                      std::string_view aad, std::string_view body);

}  // namespace egress::storage
