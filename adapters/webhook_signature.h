#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "dispatcher/base/status.h"

namespace egress::adapters {

// Standard Webhooks 1.0.0 symmetric signatures (spec: standard-webhooks/standard-webhooks
// spec/standard-webhooks.md): v1 = base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")).
// Pure functions, safe from any thread.

// A decoded signing key (the bytes behind a "whsec_" secret). Treat as a secret: never log it.
struct WebhookKey {
  std::string bytes;
};

// The spec's allowed key size: "At least 24 bytes (192 bits, 512 maximum)", read as 24..64 bytes.
inline constexpr size_t kMinWebhookKeyBytes = 24;
inline constexpr size_t kMaxWebhookKeyBytes = 64;

// Tolerance between webhook-timestamp and the verifier's clock, as in the reference libraries.
inline constexpr std::chrono::seconds kDefaultWebhookTolerance{300};

// Decodes "whsec_<base64 key>". InvalidArgument, naming the problem, when the prefix is missing,
// the base64 is malformed or the key is outside 24..64 bytes.
Result<WebhookKey> ParseWebhookSecret(std::string_view secret);

// The version tag that starts each signature entry: "v1,<base64>".
inline constexpr std::string_view kWebhookSignatureVersion = "v1,";

// webhook-timestamp of an attempt at `t`: whole Unix seconds, truncated (floor) as the spec's
// reference libraries do.
inline int64_t WebhookTimestamp(WallTime t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

// The three headers of one attempt.
struct WebhookSignatureHeaders {
  std::string id;         // webhook-id: stable across retries.
  std::string timestamp;  // webhook-timestamp: Unix seconds of this attempt.
  std::string signature;  // webhook-signature: "v1,<b64>" per key, space-separated.
};

// "v1,<base64 signature>" for one key.
std::string WebhookSignatureEntry(const WebhookKey& key, std::string_view id, int64_t timestamp,
                                  std::string_view body);

// Signs `body` (the exact bytes sent) with every key in `keys` (more than one during a secret
// rotation, current key first). `attempt_time` is truncated to whole seconds. InvalidArgument when
// `keys` is empty or `id` is empty or contains '.' (the spec forbids it).
Result<WebhookSignatureHeaders> SignWebhook(std::span<const WebhookKey> keys, std::string_view id,
                                            WallTime attempt_time, std::string_view body);
// (WebhookSigner::Sign does the same with keys prepared once, for signing many messages.)

// Receiver-side check, used by tests and the simulator. Ok when some "v1," entry of
// `headers.signature` matches some key (constant-time comparison) and the timestamp lies within
// `tolerance` of `now` in either direction. InvalidArgument for missing or malformed headers;
// Rejected for a timestamp outside the window or no matching signature.
Status VerifyWebhook(std::span<const WebhookKey> keys, const WebhookSignatureHeaders& headers,
                     std::string_view body, WallTime now,
                     std::chrono::seconds tolerance = kDefaultWebhookTolerance);

}  // namespace egress::adapters
