#pragma once

#include "adapters/platform_adapter.h"
#include "adapters/webhook_signer_cache.h"

namespace egress::adapters {

// Generic host webhooks (platforms.md section 4). The destination is the receiver's http(s) URL;
// the request is POST <URL> with the payload bytes (which must be JSON) as the body,
// "Content-Type: application/json" and Standard Webhooks headers: webhook-id = the delivery id
// (stable across retries), webhook-timestamp = `now` of this attempt, webhook-signature = one
// "v1," entry per secret of the credential (several during a rotation). The transport checks the
// resolved address with PlatformEndpoints::webhook_ssrf and never follows redirects.
//
// Interpret: 2xx delivered. A "webhook-delivery: abort-message" response header (Svix) on a
// non-2xx: dead, platform_error "abort_message". 410: dead + disable_destination. 429, 502, 503,
// 504: throttled, honouring Retry-After (delay or HTTP-date). Other 5xx: retried (Retry-After, if
// any, as the minimum wait). Other 3xx/4xx: dead with http_<status>. Transport errors are
// transient, except an SSRF refusal (dead, "destination_not_allowed").
//
// Safe from any thread: its only state after construction is a cache of the credentials'
// prepared signing keys (WebhookSignerCache).
class WebhookAdapter final : public PlatformAdapter {
 public:
  explicit WebhookAdapter(PlatformEndpoints endpoints);

  Platform platform() const override { return Platform::kWebhook; }
  Status CheckDestination(std::string_view destination) const override;

  // InvalidArgument for a destination that is not an http(s) URL, a payload that is not JSON or
  // a delivery id unfit for webhook-id (empty or with '.'); FailedPrecondition when the credential
  // has no secrets or one is not a valid "whsec_" secret.
  Result<HttpRequest> BuildRequest(const storage::Delivery& delivery, const Credential& credential,
                                   WallTime now) const override;

  AttemptReport Interpret(const storage::Delivery& delivery, const Result<HttpResponse>& response,
                          WallTime received_at) const override;

 private:
  PlatformEndpoints endpoints_;
  WebhookSignerCache signers_;
};

}  // namespace egress::adapters
