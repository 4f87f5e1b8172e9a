#include "adapters/api_key.h"

#include <fmt/format.h>
#include <openssl/sha.h>

namespace egress::adapters {
namespace {

constexpr std::string_view kDigestPrefix = "sha256:";

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

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
    std::string digest(kApiKeyDigestBytes, '\0');
    for (size_t i = 0; i < kApiKeyDigestBytes; ++i) {
      const int hi = HexValue(hex[2 * i]);
      const int lo = HexValue(hex[2 * i + 1]);
      if (hi < 0 || lo < 0) {
        return Status::InvalidArgument("a sha256: entry holds a character that is not hex");
      }
      digest[i] = static_cast<char>(hi * 16 + lo);
    }
    return digest;
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
  std::string out(kDigestPrefix);
  for (unsigned char c : digest) {
    out += fmt::format("{:02x}", c);
  }
  return out;
}

}  // namespace egress::adapters
