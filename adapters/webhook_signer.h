#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "adapters/webhook_signature.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

// Standard Webhooks v1 signatures (see webhook_signature.h) with a fixed list of keys whose
// HMAC-SHA256 key blocks (RFC 2104's inner and outer padded key) are hashed once, here, instead
// of on every signature: keep one per credential and a signature costs only its message.
//
// Immutable after construction; Append may run on several threads at once. Holds key material:
// never log it.
class WebhookSigner {
 public:
  explicit WebhookSigner(std::span<const WebhookKey> keys);
  ~WebhookSigner();
  WebhookSigner(const WebhookSigner&) = delete;
  WebhookSigner& operator=(const WebhookSigner&) = delete;

  size_t key_count() const;

  // SignWebhook (webhook_signature.h) with these keys: the same headers, the same errors.
  Result<WebhookSignatureHeaders> Sign(std::string_view id, WallTime attempt_time,
                                       std::string_view body) const;

  // Appends "v1,<base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}"))>" for every key, in order,
  // space-separated, to `*out`. Checks nothing (SignWebhook does).
  void Append(std::string_view id, int64_t timestamp, std::string_view body,
              std::string* out) const;

 private:
  struct Keyed;
  std::unique_ptr<Keyed[]> keys_;
  size_t count_;
};

}  // namespace egress::adapters
