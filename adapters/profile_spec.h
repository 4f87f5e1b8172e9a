#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/profile_template.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/platform.h"

namespace egress::adapters {

// How a profile platform's response is read (docs/platforms.md, "Profile platforms").
enum class ProfileAction : uint8_t {
  kDelivered,           // accepted, whatever the status says
  kRetry,               // transient: retried on the platform's schedule
  kThrottle,            // rate-limited: waits for the wait the response gives (or the pacing's)
  kDead,                // never retried: dead with the rule's reason
  kDisableDestination,  // the destination can never work: disabled, its deliveries wait
  kDisableCredential,   // the credential is invalid: its destinations are disabled
};

// What a reset value counts: a delay in seconds or milliseconds, or a Unix time in either.
enum class ResetUnit : uint8_t { kSeconds, kMilliseconds, kEpochSeconds, kEpochMilliseconds };

// One rule of the response classification, tried in order on every response that is not a
// success: the first that matches decides.
struct ProfileRule {
  std::vector<int> statuses;  // empty: any status
  // Matches when the body holds this text (case-sensitive); empty: any body.
  std::string body_contains;
  ProfileAction action = ProfileAction::kRetry;
  // The dead or disable reason and the attempt's platform_error; empty: "http_<status>".
  std::string reason;
};

// OAuth2 client credentials (RFC 6749 4.4): the access token each credential's requests carry,
// fetched from `token_url` with the credential's client_id and client_secret.
struct OAuth2Spec {
  std::string token_url;
  std::string scope;
  // A token is replaced this long before it expires (and used no later). Default: 5 min.
  Millis refresh_before{300'000};
};

// A platform described by a profile instead of code: everything ProfileAdapter needs to build
// its requests and read its responses. Filled by the config loader; immutable afterwards.
struct ProfileSpec {
  Platform platform = Platform::kWebhook;
  std::string base_url;

  // The request.
  std::string method = "POST";
  ProfileTemplate url;
  std::vector<std::pair<std::string, ProfileTemplate>> headers;
  // Fields set in the payload (a JSON object) before it is sent (a chat id field); none: the
  // payload as it is.
  std::vector<std::pair<std::string, ProfileTemplate>> body_fields;
  std::string content_type = "application/json";
  // The bytes a destination may hold (ranges such as "a-z" and single bytes), and its length.
  std::string destination_chars = "A-Za-z0-9_.:@-";
  size_t destination_max_bytes = 256;

  // Authentication: an optional header (its value a template, e.g. "Bearer {credential.token}")
  // and OAuth2 client credentials (then {access_token} is the token).
  std::string auth_header;
  ProfileTemplate auth_value;
  std::optional<OAuth2Spec> oauth2;

  // Success: a status in this set, and the JSON value at `success_pointer` (when set) true.
  std::vector<int> success_statuses = {200, 201, 202, 204};
  std::string success_pointer;
  // The platform's id of what was posted (a JSON pointer into a success body) and its error
  // text (into an error body), kept with the attempt.
  std::string ref_pointer;
  std::string error_pointer;

  // Rate-limit reading. Headers named here replace the standard reading of the same field.
  std::string limit_header, remaining_header, reset_header;
  ResetUnit reset_unit = ResetUnit::kSeconds;
  // Where a throttled response says how long to wait: a header (seconds) and/or a number at a
  // JSON pointer in the body, in `retry_after_unit` (kSeconds or kMilliseconds).
  std::string retry_after_header = "Retry-After";
  std::string retry_after_pointer;
  ResetUnit retry_after_unit = ResetUnit::kSeconds;

  // Classification, before the defaults (429 throttle; 408 and 5xx retry; 401 disables the
  // credential; any other status dead).
  std::vector<ProfileRule> rules;

  // Whether any of its templates (URL, auth value, headers, body fields) uses `field`.
  bool Uses(ProfileTemplate::Field field) const {
    if (url.Uses(field) || auth_value.Uses(field)) {
      return true;
    }
    for (const auto* list : {&headers, &body_fields}) {
      for (const auto& [name, value] : *list) {
        if (value.Uses(field)) {
          return true;
        }
      }
    }
    return false;
  }

  // Whether its URL holds a secret ({credential.token} or {access_token} in it): then the URL
  // is never shown, logged or kept.
  bool SecretUrl() const {
    return url.Uses(ProfileTemplate::Field::kCredentialToken) ||
           url.Uses(ProfileTemplate::Field::kAccessToken);
  }
};

}  // namespace egress::adapters
