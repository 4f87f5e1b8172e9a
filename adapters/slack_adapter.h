#pragma once

#include <string_view>

#include "adapters/platform_adapter.h"

namespace egress::adapters {

// Slack (platforms.md section 1). Two kinds of destination:
//   a channel id or name ("C0123ABC", "#ops")  -> POST {slack_base_url}/api/chat.postMessage with
//       "Authorization: Bearer <token>" and the payload (a JSON object) with "channel" set to the
//       destination;
//   an incoming-webhook URL                    -> POST <URL> with the payload bytes as they are.
//       Any https:// URL, guarded by PlatformEndpoints::webhook_ssrf, or any URL under
//       slack_base_url (operator-configured, not guarded).
//
// Interpret:
//   429                          throttled, Retry-After (seconds) as retry_after when present;
//   {"ok":false} ratelimited / rate_limited
//                                throttled (the same, on HTTP 200);
//   invalid_auth, not_authed, account_inactive, token_revoked, missing_scope (and the other
//   auth codes)                  dead with Slack's code + invalidate_credential;
//   is_archived, channel_is_archived
//                                dead + disable_destination;
//   service_unavailable, internal_error, request_timeout
//                                retried: outcome.http_status is set to 503 so Classify retries
//                                (attempt.http_status keeps the real status). internal_error may
//                                have posted (duplicate risk, detail says so);
//   other ok:false codes         dead with Slack's code (channel_not_found, msg_too_long, ...);
//                                ok:false without a string code: dead, "unknown_error";
//   {"ok":true}                  delivered, platform_ref = "ts";
//   a 2xx whose body is not JSON delivered (Slack took the call; a retry could post twice), with
//                                a detail;
//   5xx                          retried; other 3xx/4xx dead with http_<status>.
// Incoming webhooks answer a status and a plain-text code: 2xx delivered, 429 throttled, 5xx
// retried, 410 or channel_is_archived / no_service / no_active_hooks dead + disable_destination,
// other codes dead with the code.
//
// Immutable after construction; safe from any thread.
class SlackAdapter final : public PlatformAdapter {
 public:
  explicit SlackAdapter(PlatformEndpoints endpoints);

  Platform platform() const override { return Platform::kSlack; }
  Status CheckDestination(std::string_view destination) const override;

  // InvalidArgument for a malformed destination or a payload that is not a JSON object;
  // FailedPrecondition when chat.postMessage needs a token and the credential has none.
  Result<HttpRequest> BuildRequest(const storage::Delivery& delivery, const Credential& credential,
                                   WallTime now) const override;

  AttemptReport Interpret(const storage::Delivery& delivery, const Result<HttpResponse>& response,
                          WallTime received_at) const override;

  // True when `destination` is an incoming-webhook URL rather than a channel.
  bool IsIncomingWebhook(std::string_view destination) const;

 private:
  Result<HttpRequest> BuildWebhookRequest(const storage::Delivery& delivery) const;

  PlatformEndpoints endpoints_;
};

}  // namespace egress::adapters
