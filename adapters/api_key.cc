#include "adapters/api_key.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include "dispatcher/base/hex.h"

namespace egress::adapters {
namespace {

constexpr std::string_view kDigestPrefix = "sha256:";

}  // namespace

std::string ApiKeyDigest(std::string_view key) {
  std::string digest(kApiKeyDigestBytes, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(),
         reinterpret_cast<unsigned char*>(digest.data()));
  return digest;
}

Result<std::string> ParseApiKeyEntry(std::string_view entry) {
  if (entry.substr(0, kDigestPrefix.size()) == kDigestPrefix) {
    const std::string_view hex = entry.substr(kDigestPrefix.size());
    if (hex.size() != 2 * kApiKeyDigestBytes) {
      return Status::InvalidArgument(fmt::format("a sha256: entry needs {} hex digits, not {}",
                                                 2 * kApiKeyDigestBytes, hex.size()));
    }
    std::optional<std::string> digest = HexDecode(hex);
    if (!digest) {
      return Status::InvalidArgument("a sha256: entry holds a character that is not hex");
    }
    return std::move(*digest);
  }
  if (entry.empty()) {
    return Status::InvalidArgument("an API key must not be empty");
  }
  if (entry.size() < kMinApiKeyBytes || entry.size() > kMaxApiKeyBytes) {
    return Status::InvalidArgument(fmt::format("an API key is {} to {} bytes, not {}",
                                               kMinApiKeyBytes, kMaxApiKeyBytes, entry.size()));
  }
  for (char c : entry) {
    if (c < 0x21 || c > 0x7e) {
      return Status::InvalidArgument(
          "an API key is visible ASCII only (no space, control character or non-ASCII byte)");
    }
  }
  return ApiKeyDigest(entry);
}

std::string ApiKeyDigestText(std::string_view digest) {
  return std::string(kDigestPrefix) + HexEncode(digest);
}

}  // namespace egress::adapters
