#include "adapters/webhook_signature.h"

#include <charconv>
#include <string>

#include <fmt/format.h>
#include <openssl/crypto.h>

#include "adapters/base64.h"
#include "adapters/webhook_signer.h"

namespace egress::adapters {
namespace {

constexpr std::string_view kSecretPrefix = "whsec_";

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
    if (entry.starts_with(kWebhookSignatureVersion)) {
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
  std::string entry;
  WebhookSigner({&key, 1}).Append(id, timestamp, body, &entry);
  return entry;
}

Result<WebhookSignatureHeaders> SignWebhook(std::span<const WebhookKey> keys, std::string_view id,
                                            WallTime attempt_time, std::string_view body) {
  return WebhookSigner(keys).Sign(id, attempt_time, body);
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
  int64_t now_s = WebhookTimestamp(now);
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
