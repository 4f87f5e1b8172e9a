#include "adapters/attempt_reports.h"

#include <gtest/gtest.h>

#include "adapters/ssrf_guard.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

using pacing::RateLimitScope;
using pacing::TransportResult;

// Verifies the transport error mapping: timeouts, cancels, connect errors and a TLS rejection
// stay transient (a TLS rejection names itself, for the attempt and for the dead reason when the
// schedule runs out); an SSRF refusal and a malformed URL are permanent.
TEST(AttemptReportsTest, MapsTransportErrors) {
  struct Case {
    Status error;
    TransportResult transport;
    bool permanent;
    std::string code;            // the attempt's platform_error
    std::string exhausted = "";  // the dead reason at the end of the schedule, when named
  };
  const Case cases[] = {
      {Status::TimedOut("POST x: Timeout was reached"), TransportResult::kTimeout, false, ""},
      {Status::Cancelled("shutdown"), TransportResult::kCancelled, false, ""},
      {Status::Unavailable("Connection refused"), TransportResult::kConnectError, false, ""},
      {CheckDestination("169.254.169.254", SsrfPolicy{}), TransportResult::kConnectError, true,
       "ssrf_refused"},
      {Status::Rejected("POST x: SSL peer certificate was not OK"), TransportResult::kConnectError,
       false, "tls_rejected", "tls_rejected"},
      {Status::InvalidArgument("POST x: URL using bad/illegal format"),
       TransportResult::kConnectError, true, "invalid_url"},
  };
  for (const Case& c : cases) {
    AttemptReport r = ReportTransportError(c.error, kTestNow);
    EXPECT_EQ(r.outcome.transport, c.transport) << c.error.ToString();
    EXPECT_EQ(r.outcome.permanent, c.permanent) << c.error.ToString();
    EXPECT_EQ(r.outcome.platform_error, c.permanent ? c.code : "");
    EXPECT_EQ(r.outcome.exhausted_reason, c.exhausted);
    EXPECT_EQ(r.attempt.platform_error, c.code);
    EXPECT_EQ(r.attempt.http_status, 0);
    EXPECT_EQ(r.attempt.at_ms, ToUnixMillis(kTestNow));
    EXPECT_FALSE(r.attempt.detail.empty());
  }
}

// Verifies the common response fields: times, status, the rate-limit headers kept (lower-cased,
// only rate-limit names) and the observation folded from them.
TEST(AttemptReportsTest, FoldsHeadersIntoAttemptAndObservation) {
  Result<HttpResponse> response = Response(429,
                                           {{"Content-Type", "application/json"},
                                            {"X-RateLimit-Limit", "5"},
                                            {"X-RateLimit-Remaining", "0"},
                                            {"X-RateLimit-Reset-After", "1.25"},
                                            {"X-RateLimit-Bucket", "abc123"},
                                            {"X-RateLimit-Scope", "user"},
                                            {"Retry-After", "2"},
                                            {"X-Line-Request-Id", "req-1"},
                                            {"RateLimit-Policy", "\"default\";q=100;w=60"},
                                            {"Set-Cookie", "secret=1"}},
                                           "{}", Millis(250));
  AttemptReport r = ReportResponse(*response, kTestNow);
  EXPECT_EQ(r.outcome.transport, TransportResult::kResponse);
  EXPECT_EQ(r.outcome.http_status, 429);
  EXPECT_EQ(r.attempt.http_status, 429);
  EXPECT_EQ(r.attempt.duration_ms, 250);
  EXPECT_EQ(r.attempt.at_ms, ToUnixMillis(kTestNow) - 250);
  std::vector<std::pair<std::string, std::string>> want = {
      {"x-ratelimit-limit", "5"},          {"x-ratelimit-remaining", "0"},
      {"x-ratelimit-reset-after", "1.25"}, {"x-ratelimit-bucket", "abc123"},
      {"x-ratelimit-scope", "user"},       {"retry-after", "2"},
      {"x-line-request-id", "req-1"},      {"ratelimit-policy", "\"default\";q=100;w=60"}};
  EXPECT_EQ(r.attempt.rate_limit_headers, want);
  EXPECT_EQ(r.observation.limit, 5);
  EXPECT_FALSE(r.observation.window.has_value());  // The limit is Discord's, not the policy's.
  EXPECT_EQ(r.observation.remaining, 0);
  EXPECT_EQ(r.observation.reset_after, Millis(1250));
  EXPECT_EQ(r.observation.bucket, "abc123");
  EXPECT_EQ(r.observation.scope, RateLimitScope::kUser);
  EXPECT_EQ(r.observation.retry_after, Millis(2000));
  EXPECT_EQ(r.outcome.retry_after, Millis(2000));
}

// Verifies that a Retry-After on a 2xx is not a wait, and that an IETF policy's window travels
// with its quota.
TEST(AttemptReportsTest, RetryAfterOnlyOnThrottleStatuses) {
  Result<HttpResponse> response = Response(200, {{"Retry-After", "9"},
                                                 {"RateLimit", "\"m\";r=7;t=30"},
                                                 {"RateLimit-Policy", "\"m\";q=60;w=60"}});
  AttemptReport r = ReportResponse(*response, kTestNow);
  EXPECT_FALSE(r.outcome.retry_after.has_value());
  EXPECT_FALSE(r.observation.retry_after.has_value());
  EXPECT_EQ(r.observation.limit, 60);
  EXPECT_EQ(r.observation.window, Millis(60'000));
  EXPECT_EQ(r.observation.remaining, 7);
  EXPECT_EQ(r.observation.reset_after, Millis(30'000));
}

// Verifies that an absolute reset becomes a delay from receipt, clamped at zero.
TEST(AttemptReportsTest, ResetAtBecomesDelay) {
  const int64_t now_s = ToUnixMillis(kTestNow) / 1000;
  AttemptReport ahead =
      ReportResponse(*Response(200, {{"X-RateLimit-Reset", std::to_string(now_s + 10)}}), kTestNow);
  EXPECT_EQ(ahead.observation.reset_after, Millis(10'000 - 500));
  AttemptReport past = ReportResponse(
      *Response(200, {{"X-RateLimit-Reset", std::to_string(now_s - 100)}}), kTestNow);
  EXPECT_EQ(past.observation.reset_after, Millis(0));
}

// Verifies that garbage header values and bytes never crash and are kept printable and bounded.
TEST(AttemptReportsTest, GarbageHeadersStayBounded) {
  HttpHeaders headers;
  headers.push_back({"X-RateLimit-Remaining", std::string("\x01\xff\n-7", 5)});
  headers.push_back({"Retry-After", std::string(5000, '9')});
  for (int i = 0; i < 100; ++i) {
    headers.push_back({"x-ratelimit-junk", "v"});
  }
  AttemptReport r = ReportResponse(*Response(503, headers, std::string("\0\xfe", 2)), kTestNow);
  EXPECT_EQ(r.attempt.rate_limit_headers.size(), 32u);
  EXPECT_EQ(r.attempt.rate_limit_headers[0].second,
            "?"
            "?"
            "?-7");
  EXPECT_EQ(r.attempt.rate_limit_headers[1].second.size(), 256u);
  EXPECT_FALSE(r.observation.remaining.has_value());
  EXPECT_LE(r.outcome.retry_after.value_or(Millis(0)), kMaxRateLimitWait);
}

// Verifies a header name a receiver chose is kept as untrusted as a value: printable ASCII,
// at most 64 bytes (it reaches the attempt history, the store and every JSON view).
TEST(AttemptReportsTest, GarbageHeaderNamesStayPrintableAndBounded) {
  HttpHeaders headers;
  headers.push_back({std::string("X-RateLimit-\xff\xfe\x01z", 16), "1"});
  headers.push_back({"x-ratelimit-" + std::string(1000, 'a'), "2"});
  AttemptReport r = ReportResponse(*Response(200, headers), kTestNow);
  ASSERT_EQ(r.attempt.rate_limit_headers.size(), 2u);
  EXPECT_EQ(r.attempt.rate_limit_headers[0].first, "x-ratelimit-???z");
  EXPECT_EQ(r.attempt.rate_limit_headers[1].first.size(), 64u);
}

// Verifies which header names count as rate-limit related.
TEST(AttemptReportsTest, RateLimitHeaderNames) {
  EXPECT_TRUE(IsRateLimitHeaderName("Retry-After"));
  EXPECT_TRUE(IsRateLimitHeaderName("X-RateLimit-Bucket"));
  EXPECT_TRUE(IsRateLimitHeaderName("RateLimit"));
  EXPECT_TRUE(IsRateLimitHeaderName("ratelimit-reset"));
  EXPECT_TRUE(IsRateLimitHeaderName("X-Line-Accepted-Request-Id"));
  EXPECT_FALSE(IsRateLimitHeaderName("Content-Type"));
  EXPECT_FALSE(IsRateLimitHeaderName("Authorization"));
  EXPECT_FALSE(IsRateLimitHeaderName("Retry-After-Ms"));
}

}  // namespace
}  // namespace egress::adapters
