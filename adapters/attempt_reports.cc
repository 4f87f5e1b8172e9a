#include "adapters/attempt_reports.h"

#include <algorithm>

#include "adapters/ssrf_guard.h"
#include "dispatcher/base/redact.h"

namespace egress::adapters {
namespace {

using pacing::RateLimitScope;
using pacing::TransportResult;

constexpr size_t kMaxHeadersKept = 32;
constexpr size_t kMaxHeaderValue = 256;
// A header name kept in the history is as untrusted as its value: printable and bounded.
constexpr size_t kMaxHeaderName = 64;

bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsIgnoreCase(text.substr(0, prefix.size()), prefix);
}

RateLimitScope ScopeOf(std::optional<RateLimitHeaders::Scope> scope) {
  if (!scope.has_value()) {
    return RateLimitScope::kUnknown;
  }
  switch (*scope) {
    case RateLimitHeaders::Scope::kUser:
      return RateLimitScope::kUser;
    case RateLimitHeaders::Scope::kGlobal:
      return RateLimitScope::kGlobal;
    case RateLimitHeaders::Scope::kShared:
      return RateLimitScope::kShared;
  }
  return RateLimitScope::kUnknown;
}

// At most `max_bytes` of `text`, not cutting a UTF-8 sequence (the "…" of a redaction).
std::string Utf8Prefix(std::string text, size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return text;
  }
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  text.resize(end);
  return text;
}

}  // namespace

AttemptReport ReportTransportError(const Status& error, WallTime received_at) {
  AttemptReport report;
  report.attempt.at_ms = ToUnixMillis(received_at);
  // Redacted before it is cut, so a secret cannot survive half-cut; the message may carry the
  // request's URL (curl_transport.cc).
  report.attempt.detail = Utf8Prefix(RedactText(error.ToString()), 300);
  switch (error.code()) {
    case Status::Code::kTimedOut:
      report.outcome.transport = TransportResult::kTimeout;
      break;
    case Status::Code::kCancelled:
      report.outcome.transport = TransportResult::kCancelled;
      break;
    case Status::Code::kRejected:
      report.outcome.transport = TransportResult::kConnectError;
      if (IsSsrfRefusal(error)) {
        // The tenant is told the class only: "destination_not_allowed: <class> address".
        report.attempt.detail = Utf8Prefix(RedactText(error.message()), 300);
        MarkPermanent(report, "destination_not_allowed");
        break;
      }
      // A certificate the receiver got wrong (expired, wrong name, unknown issuer) is usually
      // fixed within hours: retried on the schedule, dead with tls_rejected only at its end.
      report.outcome.exhausted_reason = "tls_rejected";
      report.attempt.platform_error = "tls_rejected";
      break;
    case Status::Code::kInvalidArgument:
      report.outcome.transport = TransportResult::kConnectError;
      MarkPermanent(report, "invalid_url");
      break;
    default:
      report.outcome.transport = TransportResult::kConnectError;
      break;
  }
  return report;
}

AttemptReport ReportResponse(const HttpResponse& response, WallTime received_at,
                             RateLimitHeaders* parsed) {
  AttemptReport report;
  const int status = response.status;
  report.outcome.transport = TransportResult::kResponse;
  report.outcome.http_status = status;
  const Millis elapsed = std::max(Millis(0), response.elapsed);
  report.attempt.at_ms = ToUnixMillis(received_at) - elapsed.count();
  report.attempt.duration_ms = elapsed.count();
  report.attempt.http_status = status;
  report.attempt.rate_limit_headers = RateLimitHeadersSeen(response.headers);
  if (response.body_truncated) {
    report.attempt.detail = "response body truncated";
  }
  RateLimitHeaders headers = ParseRateLimitHeaders(response.headers, status, received_at);
  report.observation = ObservationFrom(headers);
  if ((status == 429 || status >= 500) && headers.retry_after.has_value()) {
    report.outcome.retry_after = headers.retry_after;
    report.observation.retry_after = headers.retry_after;
  }
  if (parsed != nullptr) {
    *parsed = std::move(headers);
  }
  return report;
}

pacing::RateLimitObservation ObservationFrom(const RateLimitHeaders& headers) {
  pacing::RateLimitObservation obs;
  obs.limit = headers.limit;
  if (headers.policy_window.has_value() && headers.policy_quota.has_value() &&
      headers.limit == headers.policy_quota) {
    obs.window = std::chrono::duration_cast<Millis>(*headers.policy_window);
  }
  obs.remaining = headers.remaining;
  if (headers.reset_after.has_value()) {
    obs.reset_after = headers.reset_after;
  } else if (headers.reset_at.has_value()) {
    Millis delta = std::chrono::duration_cast<Millis>(*headers.reset_at - headers.received_at);
    obs.reset_after = std::clamp(delta, Millis(0), Millis(kMaxRateLimitWait));
  }
  obs.global = headers.global;
  obs.scope = ScopeOf(headers.scope);
  obs.bucket = headers.bucket.value_or("");
  return obs;
}

bool IsRateLimitHeaderName(std::string_view name) {
  return EqualsIgnoreCase(name, "retry-after") || StartsWithIgnoreCase(name, "x-ratelimit-") ||
         StartsWithIgnoreCase(name, "ratelimit") || StartsWithIgnoreCase(name, "x-line-");
}

std::vector<std::pair<std::string, std::string>> RateLimitHeadersSeen(const HttpHeaders& headers) {
  std::vector<std::pair<std::string, std::string>> seen;
  for (const HttpHeader& h : headers) {
    if (seen.size() >= kMaxHeadersKept) {
      break;
    }
    if (IsRateLimitHeaderName(h.name)) {
      seen.emplace_back(Printable(ToLowerAscii(h.name), kMaxHeaderName),
                        Printable(TrimOws(h.value), kMaxHeaderValue));
    }
  }
  return seen;
}

std::optional<std::string_view> FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const HttpHeader& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) {
      return TrimOws(h.value);
    }
  }
  return std::nullopt;
}

std::string Printable(std::string_view text, size_t max_bytes) {
  std::string out(text.substr(0, max_bytes));
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      c = '?';
    }
  }
  return out;
}

void MarkThrottled(AttemptReport& report, std::optional<Millis> wait, std::string platform_error) {
  report.outcome.throttled = true;
  report.outcome.retry_after = wait;
  report.observation.retry_after = wait;
  report.outcome.platform_error = platform_error;
  report.attempt.platform_error = std::move(platform_error);
}

void MarkPermanent(AttemptReport& report, std::string platform_error) {
  report.outcome.permanent = true;
  report.outcome.platform_error = platform_error;
  report.attempt.platform_error = std::move(platform_error);
}

std::string HttpErrorCode(int status) { return "http_" + std::to_string(status); }

}  // namespace egress::adapters
