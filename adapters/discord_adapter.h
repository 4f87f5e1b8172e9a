#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "adapters/platform_adapter.h"

namespace egress::adapters {

// Discord (platforms.md section 2). Destinations:
//   "channels/<channel id>"           -> bot Create Message,
//       POST {discord_base_url}/api/v10/channels/<id>/messages, "Authorization: Bot <token>", the
//       payload (a JSON object) with "nonce" = DiscordNonce(delivery id) and "enforce_nonce": true,
//       so a retry within Discord's nonce window returns the first message instead of posting
//       twice (a payload's own nonce is replaced: it could repeat across deliveries);
//   "webhooks/<webhook id>/<token>"    -> Execute Webhook,
//       POST {discord_base_url}/api/v10/webhooks/<id>/<token>?wait=true, the payload bytes as they
//       are, no Authorization (the token in the path is the credential).
//
// Interpret: X-RateLimit-* fold into the observation (limit, remaining, reset_after, bucket,
// global, scope). 2xx delivered, platform_ref = the message "id". 429 throttled with the body's
// float retry_after (seconds, preferred) else Retry-After; body "global": true sets
// observation.global. 401 dead + invalidate_credential (bot) or disable_destination (webhook: its
// token is the destination's). 404 with code 10015 (unknown webhook) dead + disable_destination.
// Other 3xx/4xx dead with Discord's JSON code ("50013") else http_<status>; 5xx retried.
//
// Immutable after construction; safe from any thread.
class DiscordAdapter final : public PlatformAdapter {
 public:
  explicit DiscordAdapter(PlatformEndpoints endpoints);

  Platform platform() const override { return Platform::kDiscord; }
  Status CheckDestination(std::string_view destination) const override;

  // InvalidArgument for a malformed destination or a payload that is not a JSON object;
  // FailedPrecondition when a bot destination's credential has no token.
  Result<HttpRequest> BuildRequest(const storage::Delivery& delivery, const Credential& credential,
                                   WallTime now) const override;

  AttemptReport Interpret(const storage::Delivery& delivery, const Result<HttpResponse>& response,
                          WallTime received_at) const override;

 private:
  PlatformEndpoints endpoints_;
};

// A parsed Discord destination.
struct DiscordTarget {
  enum class Kind { kChannel, kWebhook };
  Kind kind = Kind::kChannel;
  std::string id;     // channel id or webhook id
  std::string token;  // webhook token; empty for channels
};

// Parses "channels/<id>" or "webhooks/<id>/<token>" (segments of unreserved URL characters);
// nullopt otherwise.
std::optional<DiscordTarget> ParseDiscordDestination(std::string_view destination);

}  // namespace egress::adapters
