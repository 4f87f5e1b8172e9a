#pragma once

#include <array>
#include <string_view>

#include "adapters/platform_adapter.h"
#include "adapters/profile_spec.h"

namespace egress::adapters {

// The adapter of a platform described by a profile (docs/platforms.md, "Profile platforms"):
// the shipped profile platforms, or any HTTP chat API an operator writes a profile for.
//
// BuildRequest: `spec.method` to `spec.url` expanded (the destination and secrets percent-encoded
// as a path segment), `spec.headers` and the auth header expanded, traceparent when the delivery
// has one; the body is the payload, with `spec.body_fields` set in it when there are any (the
// payload must then be a JSON object).
//
// Interpret: a status in `spec.success_statuses` whose body has `true` at `spec.success_pointer`
// (when set) is delivered, platform_ref from `spec.ref_pointer`. Anything else is tried against
// `spec.rules` in order, then the defaults: 429 throttled; 408 and 5xx retried; 401 disables the
// credential (an OAuth2 platform's 401 first drops its access token: access_token_rejected);
// any other status dead with "http_<status>". A throttle waits for Retry-After from
// `spec.retry_after_header` or the body's `spec.retry_after_pointer`, whichever is longer. The
// limit, remaining and reset headers the profile names replace the standard reading of those
// fields (ParseRateLimitHeaders) for every response.
//
// Immutable after construction; safe from any thread.
class ProfileAdapter final : public PlatformAdapter {
 public:
  explicit ProfileAdapter(ProfileSpec spec);

  Platform platform() const override { return spec_.platform; }
  // OK for a non-empty destination of `destination_chars`, at most destination_max_bytes.
  Status CheckDestination(std::string_view destination) const override;
  // InvalidArgument for a destination or payload that cannot be sent; FailedPrecondition when
  // the credential lacks what the templates use (a token, a client id, an access token).
  Result<HttpRequest> BuildRequest(const storage::Delivery& delivery, const Credential& credential,
                                   WallTime now) const override;
  AttemptReport Interpret(const storage::Delivery& delivery, const Result<HttpResponse>& response,
                          WallTime received_at) const override;

  // With [oauth2]: POST token_url, form-encoded grant_type=client_credentials, client_id,
  // client_secret and scope (RFC 6749 4.4.2). Nullopt without [oauth2] or for a credential
  // without a client_id.
  std::optional<HttpRequest> TokenRequest(const Credential& credential) const override;
  bool UsesAccessToken() const override { return spec_.oauth2.has_value(); }
  // 200 with {"access_token": "...", "expires_in": N} (N seconds, 1 s to a day; absent: an
  // hour); 400 and 401 Rejected naming the endpoint's "error"; anything else Unavailable.
  Result<AccessToken> ReadToken(const Result<HttpResponse>& response) const override;

  const ProfileSpec& spec() const { return spec_; }

 private:
  void ReadLimits(const HttpResponse& response, WallTime received_at, AttemptReport& report) const;
  void Classify(const HttpResponse& response, std::string_view error_text,
                std::optional<Millis> body_wait, AttemptReport& report) const;

  ProfileSpec spec_;
  std::array<bool, 256> destination_bytes_{};
  // What its templates use, found once (spec_.Uses).
  bool uses_token_ = false;
  bool uses_client_id_ = false;
  bool uses_access_token_ = false;
};

// The byte set a `destination_chars` text names ("A-Za-z0-9_.:@-": ranges and single bytes; a
// '-' first or last is itself). InvalidArgument for an inverted range or an empty set.
Result<std::array<bool, 256>> ParseByteSet(std::string_view text);

}  // namespace egress::adapters
