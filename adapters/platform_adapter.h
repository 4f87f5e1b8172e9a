#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http_transport.h"
#include "dispatcher/base/platform.h"
#include "dispatcher/base/result.h"
#include "dispatcher/pacing/delivery_outcome.h"
#include "dispatcher/pacing/rate_limit_observation.h"
#include "storage/delivery.h"

namespace egress::adapters {

// A tenant's credential as the adapters need it. Secrets never appear in logs or responses.
struct Credential {
  std::string name;      // as registered for the tenant
  std::string platform;  // slack | discord | line | webhook | a profile platform's name
  std::string token;     // Slack/Discord bot token, LINE channel access token, a bot's token
  // OAuth2 client credentials (a profile platform with [platforms.<p>.oauth2]): the client's id
  // and its secret. Default: none.
  std::string client_id;
  std::string client_secret;
  // The OAuth2 access token the delivery loop holds for this credential (AccessTokens), set on
  // the copy passed to BuildRequest; never stored. Default: none.
  std::string access_token;
  // Webhook signing secrets, "whsec_..."; during a rotation several, all used to sign.
  std::vector<std::string> secrets;
  // A client certificate (PEM file) and its private key (PEM file) for receivers that require
  // mTLS ([tenants.<t>.credentials.<name>] client_cert_file, client_key_file): presented on
  // this credential's requests only; both or neither. Paths, never the key itself. Default: none.
  std::string client_cert_file;
  std::string client_key_file;
};

// Where each platform lives and what it may reach. From the config ([platforms.*]).
struct PlatformEndpoints {
  std::string slack_base_url = "https://slack.com";
  std::string discord_base_url = "https://discord.com";
  std::string line_base_url = "https://api.line.me";
  // Customer webhook URLs are checked by the SSRF guard with this policy.
  SsrfPolicy webhook_ssrf;
  // A tenant's own policy ([tenants.<t>] allow_private_networks, allowed_cidrs), used instead of
  // webhook_ssrf for that tenant's deliveries. Default: none.
  std::map<std::string, SsrfPolicy, std::less<>> tenant_webhook_ssrf;

  // The policy for `tenant`'s customer URLs.
  const SsrfPolicy& WebhookSsrfFor(std::string_view tenant) const {
    auto it = tenant_webhook_ssrf.find(tenant);
    return it == tenant_webhook_ssrf.end() ? webhook_ssrf : it->second;
  }
};

// What one attempt taught, ready for the pacing engine and the store.
struct AttemptReport {
  pacing::DeliveryOutcome outcome;           // for Scheduler::OnOutcome / Classify
  pacing::RateLimitObservation observation;  // for Scheduler::Observe
  storage::Attempt attempt;                  // for the delivery's history
  // The destination can never work as configured (webhook 410, Discord unknown webhook 10015,
  // Slack channel_is_archived): disable it with this reason; its deliveries defer.
  std::optional<std::string> disable_destination;
  // The credential is invalid (Discord or Slack 401 / invalid_auth): its deliveries defer.
  std::optional<std::string> invalidate_credential;
  // An OAuth2 platform refused the access token (401): the loop drops it, fetches another and
  // sends again without counting an attempt; a fresh token refused is invalidate_credential.
  bool access_token_rejected = false;
  // The platform's id for what was posted: Slack `ts`, Discord message id, LINE request id.
  std::string platform_ref;
  // On success: the units the attempt actually took when they differ from the delivery's cost
  // (docs/costs.md); the delivery's quota charges are corrected to it. Default: unset.
  std::optional<int64_t> actual_cost;
};

// An OAuth2 access token and how long it is valid from when it was received.
struct AccessToken {
  std::string token;
  Millis expires_in{0};
  // Replaced this long before it expires (the profile's oauth2.refresh_before).
  Millis refresh_before{0};
};

// Turns a delivery into an HTTP request and the response into an AttemptReport. Pure: no I/O,
// no clock (times are passed in); safe to call from the dispatcher loop.
class PlatformAdapter {
 public:
  virtual ~PlatformAdapter() = default;

  virtual Platform platform() const = 0;

  // Whether `destination` has this platform's shape (intake refuses a delivery otherwise, with
  // 422 invalid_destination): OK, or InvalidArgument whose message says what the shape must be.
  // Says nothing about reachability (the SSRF guard decides that on the resolved address).
  virtual Status CheckDestination(std::string_view destination) const = 0;

  // InvalidArgument naming the problem when the delivery cannot be sent as it is (payload not
  // JSON, destination malformed); such a delivery is dead, not retried.
  virtual Result<HttpRequest> BuildRequest(const storage::Delivery& delivery,
                                           const Credential& credential, WallTime now) const = 0;

  // `response` is the transport's result: a response of any status, or a transport error.
  virtual AttemptReport Interpret(const storage::Delivery& delivery,
                                  const Result<HttpResponse>& response,
                                  WallTime received_at) const = 0;

  // Whether its requests carry an OAuth2 access token (a profile with [oauth2]). Default: no.
  virtual bool UsesAccessToken() const { return false; }
  // A platform whose requests carry an OAuth2 access token (Credential::access_token): the
  // token endpoint's request for `credential`'s token; nullopt for every other platform (the
  // default). The delivery loop keeps the token (AccessTokens) and fetches it again before it
  // expires.
  virtual std::optional<HttpRequest> TokenRequest(const Credential& /*credential*/) const {
    return std::nullopt;
  }
  // The token endpoint's answer: the token, or Rejected when the endpoint refused the client
  // (400 or 401: the credential is wrong), or Unavailable for anything passing (no answer, 429,
  // 5xx, an answer without a token).
  virtual Result<AccessToken> ReadToken(const Result<HttpResponse>& /*response*/) const {
    return Status::Unavailable("this platform has no token endpoint");
  }
};

}  // namespace egress::adapters
