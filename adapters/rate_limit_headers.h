#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "adapters/http_header.h"
#include "dispatcher/base/clock.h"

namespace egress::adapters {

// What one response's headers say about the sender's budget. Every field is optional: absent
// means no header said it (or only garbage did). Pure data; safe to copy between threads.
//
// Header families, read from any mix of case and in any order:
//   Retry-After               delay-seconds (lenient: "1.5", "+2", "1e3"; negative is 0) or an
//                             HTTP-date (IMF-fixdate, RFC 850, asctime) measured from receipt.
//   X-RateLimit-Limit / -Remaining / -Reset / -Reset-After / -Bucket / -Global / -Scope
//                             Discord; GitHub's lowercase x-ratelimit-* are the same names, and
//                             GitHub's x-ratelimit-resource fills `bucket` when -Bucket is absent.
//   RateLimit / RateLimit-Policy
//                             IETF drafts: '"default";r=50;t=30' and '"default";q=100;w=60'
//                             (draft-09+, also draft-08 token names), draft-07
//                             'limit=100, remaining=50, reset=30' and draft-06 '100;w=60'.
//   RateLimit-Limit / -Remaining / -Reset
//                             IETF draft-06 and earlier; the first list member counts.
//
// Reset values (X-RateLimit-Reset, RateLimit-Reset, draft-07 reset=) may be a delay or a Unix
// time depending on the server, so they are read by magnitude: >= 1e12 is Unix milliseconds,
// >= 1e9 (2001-09-09) is Unix seconds and sets `reset_at`; smaller values are seconds from
// receipt and set `reset_after` (a delay of 31 years is implausible; an epoch before 2001 too).
//
// Conflicts: per field, X-RateLimit-* beats RateLimit/RateLimit-Policy, which beats the older
// RateLimit-*. Repeated headers of one family keep the most conservative value: the smallest
// limit and remaining, the latest reset and the longest Retry-After. Garbage values are ignored
// field by field; parsing never throws and never fails as a whole.
struct RateLimitHeaders {
  int http_status = 0;
  WallTime received_at;

  std::optional<int64_t> limit;       // Bucket size; else the chosen IETF policy's quota.
  std::optional<int64_t> remaining;   // Requests left in the current window (>= 0).
  std::optional<WallTime> reset_at;   // When the window resets, as the server's wall clock says.
  std::optional<Millis> reset_after;  // The same as a delay from receipt (skew-free).
  std::optional<Millis> retry_after;  // From Retry-After, clamped to [0, kMaxRateLimitWait].
  std::optional<std::string> bucket;  // Discord bucket hash or GitHub resource name.
  bool global = false;                // X-RateLimit-Global: true.
  enum class Scope { kUser, kGlobal, kShared };
  std::optional<Scope> scope;  // X-RateLimit-Scope.

  // The IETF policy in force: the RateLimit member with the fewest remaining requests (ties: the
  // longest t), and the RateLimit-Policy member of the same name, else the first policy.
  // Policies whose quota unit (qu) is not "requests" are skipped.
  std::optional<std::string> policy_name;
  std::optional<int64_t> policy_quota;
  std::optional<std::chrono::seconds> policy_window;

  // How long the sender should hold this key before the next request, or nullopt when the
  // headers do not say. Retry-After wins over everything else, as the IETF draft requires, but
  // only on 3xx/4xx/5xx responses (on a 2xx it is not a throttle). Otherwise, when remaining is
  // 0: reset_after, else reset_at minus received_at. Always within [0, kMaxRateLimitWait].
  std::optional<Millis> SuggestedWait() const;
};

// The cap on every delay read from headers (Retry-After, reset_after, reset_at - received_at):
// a day. It bounds mistakes such as a legacy Retry-After in milliseconds or an epoch sent as a
// delay; a longer real wait is re-learned from the next response.
inline constexpr Millis kMaxRateLimitWait = std::chrono::hours(24);

// Parses the rate-limit headers of one response received at `received_at` (injected time).
RateLimitHeaders ParseRateLimitHeaders(std::span<const HttpHeader> headers, int http_status,
                                       WallTime received_at);

}  // namespace egress::adapters
