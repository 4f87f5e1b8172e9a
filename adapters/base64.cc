#include "adapters/base64.h"

#include <openssl/evp.h>

namespace egress::adapters {

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  // EVP_EncodeBlock writes a trailing NUL, so encode into a buffer one byte larger.
  out.push_back('\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

namespace {

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

}  // namespace

std::optional<std::string> Base64Decode(std::string_view text) {
  std::string padded(text);
  while (padded.size() % 4 != 0 && padded.size() % 4 != 1) {
    padded.push_back('=');
  }
  if (padded.size() % 4 != 0) {
    return std::nullopt;
  }
  size_t body = padded.size();
  while (body > 0 && padded.size() - body < 2 && padded[body - 1] == '=') {
    --body;
  }
  for (size_t i = 0; i < body; ++i) {
    if (!IsBase64Char(padded[i])) {
      return std::nullopt;
    }
  }
  if (padded.size() - body > 0 && body % 4 < 2) {
    return std::nullopt;
  }
  std::string out(3 * (padded.size() / 4), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(padded.data()),
                          static_cast<int>(padded.size()));
  if (n < 0) {
    return std::nullopt;
  }
  out.resize(static_cast<size_t>(n) - (padded.size() - body));
  return out;
}

}  // namespace egress::adapters
