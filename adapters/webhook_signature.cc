#include "adapters/webhook_signature.h"

#include <charconv>
#include <string>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "adapters/base64.h"

namespace egress::adapters {
namespace {

constexpr std::string_view kSecretPrefix = "whsec_";
constexpr std::string_view kVersionPrefix = "v1,";

int64_t UnixSeconds(WallTime t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::string HmacSha256(std::string_view key, std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &digest_len);
  return std::string(reinterpret_cast<const char*>(digest), digest_len);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// True when some "v1," entry of the space-separated `header` equals `expected`.
bool HeaderHasSignature(std::string_view header, std::string_view expected) {
  bool found = false;
  while (!header.empty()) {
    size_t end = header.find(' ');
    std::string_view entry = header.substr(0, end);
    header.remove_prefix(end == std::string_view::npos ? header.size() : end + 1);
    if (entry.substr(0, kVersionPrefix.size()) == kVersionPrefix) {
      found = ConstantTimeEquals(entry, expected) || found;
    }
  }
  return found;
}

Result<int64_t> ParseTimestamp(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument(
        fmt::format("webhook-timestamp '{}' is not integer seconds", text.substr(0, 32)));
  }
  return value;
}

}  // namespace

Result<WebhookKey> ParseWebhookSecret(std::string_view secret) {
  if (secret.substr(0, kSecretPrefix.size()) != kSecretPrefix) {
    return Status::InvalidArgument("webhook secret must start with 'whsec_'");
  }
  std::optional<std::string> key = Base64Decode(secret.substr(kSecretPrefix.size()));
  if (!key.has_value()) {
    return Status::InvalidArgument("webhook secret after 'whsec_' is not valid base64");
  }
  if (key->size() < kMinWebhookKeyBytes || key->size() > kMaxWebhookKeyBytes) {
    return Status::InvalidArgument(
        fmt::format("webhook secret key is {} bytes; Standard Webhooks needs {} to {}", key->size(),
                    kMinWebhookKeyBytes, kMaxWebhookKeyBytes));
  }
  return WebhookKey{std::move(*key)};
}

std::string WebhookSignatureEntry(const WebhookKey& key, std::string_view id, int64_t timestamp,
                                  std::string_view body) {
  std::string message = fmt::format("{}.{}.", id, timestamp);
  message.append(body);
  return std::string(kVersionPrefix) + Base64Encode(HmacSha256(key.bytes, message));
}

Result<WebhookSignatureHeaders> SignWebhook(std::span<const WebhookKey> keys, std::string_view id,
                                            WallTime attempt_time, std::string_view body) {
  if (keys.empty()) {
    return Status::InvalidArgument("no webhook signing key");
  }
  if (id.empty() || id.find('.') != std::string_view::npos) {
    return Status::InvalidArgument("webhook-id must be non-empty and contain no '.'");
  }
  int64_t timestamp = UnixSeconds(attempt_time);
  WebhookSignatureHeaders headers{std::string(id), std::to_string(timestamp), ""};
  for (const WebhookKey& key : keys) {
    if (!headers.signature.empty()) {
      headers.signature.push_back(' ');
    }
    headers.signature += WebhookSignatureEntry(key, id, timestamp, body);
  }
  return headers;
}

Status VerifyWebhook(std::span<const WebhookKey> keys, const WebhookSignatureHeaders& headers,
                     std::string_view body, WallTime now, std::chrono::seconds tolerance) {
  if (headers.id.empty() || headers.signature.empty()) {
    return Status::InvalidArgument("missing webhook-id or webhook-signature");
  }
  Result<int64_t> timestamp = ParseTimestamp(headers.timestamp);
  if (!timestamp.has_value()) {
    return timestamp.error();
  }
  int64_t now_s = UnixSeconds(now);
  if (*timestamp < now_s - tolerance.count() || *timestamp > now_s + tolerance.count()) {
    return Status::Rejected(fmt::format("webhook-timestamp {} is more than {} s from now ({})",
                                        *timestamp, tolerance.count(), now_s));
  }
  for (const WebhookKey& key : keys) {
    std::string expected = WebhookSignatureEntry(key, headers.id, *timestamp, body);
    if (HeaderHasSignature(headers.signature, expected)) {
      return Status::Ok();
    }
  }
  return Status::Rejected("no webhook-signature entry matches a known key");
}

}  // namespace egress::adapters
