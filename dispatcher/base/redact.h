#pragma once

#include <string>
#include <string_view>

namespace egress {

// The one redaction layer: what logs, metrics labels, API answers, attempt details and the CLI
// show of a text that may carry a secret (docs/security.md, "Redaction"). Pure functions, safe
// from any thread; the output is bounded by a small multiple of the input.
//
// Replaced by kRedacted ("…", U+2026):
//   - a Discord webhook token:            webhooks/123/<token>        -> webhooks/123/…
//   - a Slack incoming-webhook path:      /services/T1/B2/<secret>     -> /services/…
//                                         (also /workflows/… and /triggers/…)
//   - an Office connector webhook path:   /webhookb2/<ids>/...         -> /webhookb2/…
//                                         (also /IncomingWebhook/…)
//   - a bot token in a path:              /bot123:<token>/sendMessage  -> /bot…/sendMessage
//   - a Mattermost or Rocket.Chat hook:   /hooks/<26 a-z0-9>, /hooks/<id>/<token> -> /hooks/…
//   - URL userinfo:                       https://user:pass@host/      -> https://…@host/
//   - URL query values and fragments:     ?token=abc&x=1#frag          -> ?token=…&x=…#…
// In free text a URL runs from its "://" to white space, a control byte, '"', '<', '>' or '`'
// (RFC 3986 appendix C); a destination is one URL to its end (RedactDestination).
// Every control byte (below 0x20, and 0x7f) is shown as \xNN, except the unit separator 0x1f that
// joins the parts of a destination key, which is shown as '/': no raw control byte ever passes.
// Other bytes (UTF-8 text) pass as they are.
inline constexpr std::string_view kRedacted = "\xe2\x80\xa6";

// Any text: an error message, a destination, a URL, a reason, a label value.
std::string RedactText(std::string_view text);

// False when RedactText(text) == text for sure: no control byte and no '/', '?', '@', '#', ':'
// or '%' (a bot token's ':' may come percent-encoded: "bot1%3Asecret" is redacted). Lets hot
// paths (metric labels) skip the copy.
bool MayNeedRedaction(std::string_view text);

// A destination (a URL, a channel id, "webhooks/1/<token>", ...) as an operator reads it: a URL
// is redacted as one, to the end of the text, so no byte in it can end it early (a destination
// stored before intake refused bytes outside RFC 3986). What decides whether a destination is
// sealed at rest (storage/destination_seal.h): one parse for both.
std::string RedactDestination(std::string_view destination);

// A destination key (platform, tenant, credential and destination joined by 0x1f) as an operator
// reads it: "discord/acme/bot/webhooks/123/…", its destination part by RedactDestination (a text
// that is not a key is taken as a destination alone).
std::string DestinationKeyText(std::string_view key);

}  // namespace egress
