#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/http_transport.h"
#include "adapters/platform_adapter.h"
#include "adapters/rate_limit_headers.h"
#include "dispatcher/pacing/rate_limit_observation.h"

namespace egress::adapters {

// The parts of an AttemptReport every adapter fills the same way. Pure functions, safe from any
// thread.

// A transport error (no response) as a report: TimedOut -> kTimeout, Cancelled -> kCancelled,
// Rejected by the SSRF guard -> permanent "ssrf_refused", any other Rejected (TLS verification)
// -> transient, named "tls_rejected" (its dead reason when the schedule runs out),
// InvalidArgument (malformed URL) -> permanent "invalid_url",
// everything else -> kConnectError. attempt.at_ms is `received_at` (no duration is known).
AttemptReport ReportTransportError(const Status& error, WallTime received_at);

// A response of any status as a report, before the adapter's own reading of it: transport
// kResponse, http_status, attempt (at_ms = received_at - elapsed, duration, status, the
// rate-limit headers seen) and the observation from the headers. A Retry-After on a 429 or 5xx is
// copied to outcome.retry_after and observation.retry_after. `parsed`, when not null, receives
// the parsed headers.
AttemptReport ReportResponse(const HttpResponse& response, WallTime received_at,
                             RateLimitHeaders* parsed = nullptr);

// The pacing engine's view of parsed headers (without retry_after, which the adapter decides):
// limit (+ window when it is the IETF policy's), remaining, reset_after (or reset_at measured
// from receipt, within [0, kMaxRateLimitWait]), global, scope, bucket.
pacing::RateLimitObservation ObservationFrom(const RateLimitHeaders& headers);

// Rate-limit related header names: retry-after, x-ratelimit-*, ratelimit*, x-line-*.
bool IsRateLimitHeaderName(std::string_view name);

// The rate-limit related headers of `headers`, names lower-cased, in arrival order; at most 32,
// values cut at 256 bytes.
std::vector<std::pair<std::string, std::string>> RateLimitHeadersSeen(const HttpHeaders& headers);

// The value of the first header named `name` (case-insensitive), trimmed, or nullopt.
std::optional<std::string_view> FindHeader(const HttpHeaders& headers, std::string_view name);

// `text` cut to `max_bytes`, with control and non-ASCII bytes shown as '?', for details built
// from what a platform sent.
std::string Printable(std::string_view text, size_t max_bytes = 200);

// Marks `report` throttled (kBudgetExhausted) with `wait` (nullopt: the pacing engine decides),
// setting both outcome.retry_after and observation.retry_after.
void MarkThrottled(AttemptReport& report, std::optional<Millis> wait, std::string platform_error);

// Marks `report` permanent (dead) with the platform's code.
void MarkPermanent(AttemptReport& report, std::string platform_error);

// "http_<status>", the platform_error of a status without a platform code.
std::string HttpErrorCode(int status);

}  // namespace egress::adapters
