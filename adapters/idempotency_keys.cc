#include "adapters/idempotency_keys.h"

#include <array>
#include <cstdint>

#include <openssl/evp.h>

#include "dispatcher/base/hex.h"

namespace egress::adapters {
namespace {

// A fixed, random namespace for relay-egress name-based UUIDs. Never change it: keys of
// deliveries already queued would change.
constexpr std::array<uint8_t, 16> kLineNamespace = {0x6f, 0x2c, 0x91, 0x3e, 0x5b, 0x47, 0x4d, 0x0a,
                                                    0x9c, 0x18, 0xe2, 0x73, 0x40, 0xb5, 0xd6, 0x81};

std::string Digest(const EVP_MD* md, std::string_view prefix, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, md, nullptr);
  EVP_DigestUpdate(ctx, prefix.data(), prefix.size());
  EVP_DigestUpdate(ctx, data.data(), data.size());
  EVP_DigestFinal_ex(ctx, out, &len);
  EVP_MD_CTX_free(ctx);
  return std::string(reinterpret_cast<const char*>(out), len);
}

}  // namespace

std::string DiscordNonce(std::string_view delivery_id) {
  const std::string digest = Digest(EVP_sha256(), "discord-nonce:", delivery_id);
  std::string hex;
  for (size_t i = 0; i < 13; ++i) {
    AppendHexByte(hex, static_cast<uint8_t>(digest[i]));
  }
  hex.resize(25);
  return hex;
}

std::string LineRetryKey(std::string_view delivery_id) {
  const std::string_view ns(reinterpret_cast<const char*>(kLineNamespace.data()),
                            kLineNamespace.size());
  std::string digest = Digest(EVP_sha1(), ns, delivery_id);
  digest[6] = static_cast<char>((static_cast<uint8_t>(digest[6]) & 0x0f) | 0x50);  // version 5
  digest[8] = static_cast<char>((static_cast<uint8_t>(digest[8]) & 0x3f) | 0x80);  // RFC 4122
  std::string uuid;
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      uuid.push_back('-');
    }
    AppendHexByte(uuid, static_cast<uint8_t>(digest[i]));
  }
  return uuid;
}

}  // namespace egress::adapters
