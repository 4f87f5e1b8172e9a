#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/base/result.h"

namespace egress::adapters {

// Text with {placeholders}, as a profile platform's URL, headers and body fields are written
// (docs/platforms.md, "Profile platforms"). Parsed once when the profile is loaded; expanded per
// request. "{{" and "}}" stand for a brace.
class ProfileTemplate {
 public:
  enum class Field : uint8_t {
    kText,              // literal text
    kBaseUrl,           // {base_url}: the platform's base URL ([platforms.<p>] base_url)
    kDestination,       // {destination}: the delivery's destination
    kDeliveryId,        // {delivery_id}: the delivery's id (an idempotency key)
    kCredentialToken,   // {credential.token}: a secret
    kCredentialClient,  // {credential.client_id}
    kAccessToken,       // {access_token}: the OAuth2 access token of the credential, a secret
  };

  // The values one request expands with. Borrowed for the call.
  struct Values {
    std::string_view base_url, destination, delivery_id, token, client_id, access_token;
  };

  ProfileTemplate() = default;

  // InvalidArgument naming an unknown placeholder or an unmatched brace.
  static Result<ProfileTemplate> Parse(std::string_view text);

  // The text with every placeholder replaced. With `in_url`, the destination and secrets are
  // percent-encoded as a URL path segment allows (RFC 3986 pchar), so that no value can add a
  // path, a query or a fragment; {base_url} is pasted as it is.
  std::string Expand(const Values& values, bool in_url) const;

  bool Uses(Field field) const;
  bool empty() const { return parts_.empty(); }
  // As written in the profile.
  const std::string& text() const { return text_; }

 private:
  struct Part {
    Field field = Field::kText;
    std::string text;
  };
  std::vector<Part> parts_;
  std::string text_;
};

// `text` percent-encoded as a path segment allows: unreserved, sub-delims, ':' and '@' as they
// are, every other byte as %XX.
std::string PercentEncodeSegment(std::string_view text);

// `text` as application/x-www-form-urlencoded wants a value: unreserved bytes (A-Z a-z 0-9
// - . _ ~) as they are, every other byte as %XX.
std::string PercentEncodeForm(std::string_view text);

}  // namespace egress::adapters
