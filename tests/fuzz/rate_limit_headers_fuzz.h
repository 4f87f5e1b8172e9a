#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/http_header.h"
#include "adapters/rate_limit_headers.h"
#include "dispatcher/base/clock.h"

namespace egress::adapters {

// The body of the rate-limit header fuzz target, shared by the libFuzzer entry point
// (rate_limit_headers_fuzz.cc) and the deterministic driver in the unit tests.
//
// Input layout: byte 0 picks the HTTP status, bytes 1-4 the receipt time (Unix seconds,
// little-endian, so 1970 to 2106), the rest is header lines split at '\n'. A line with ':' is
// "name:value"; otherwise its first byte picks a known rate-limit header name and the rest is
// the value, so mutations mostly exercise the value parsers.
//
// Returns false when the parse result breaks an invariant (a delay outside [0, cap], a negative
// count, a reset beyond the cap, an oversized label); the parser must never crash either.
inline bool FuzzRateLimitHeadersOnce(const uint8_t* data, size_t size) {
  constexpr int kStatuses[] = {200, 202, 204, 301, 400, 401, 403, 404, 410, 429, 500, 503, 0};
  constexpr std::string_view kNames[] = {
      "Retry-After",         "X-RateLimit-Limit",       "X-RateLimit-Remaining",
      "X-RateLimit-Reset",   "X-RateLimit-Reset-After", "X-RateLimit-Bucket",
      "X-RateLimit-Global",  "X-RateLimit-Scope",       "x-ratelimit-resource",
      "RateLimit",           "RateLimit-Policy",        "RateLimit-Limit",
      "RateLimit-Remaining", "RateLimit-Reset"};
  if (size < 5) {
    return true;
  }
  int status = kStatuses[data[0] % std::size(kStatuses)];
  uint32_t seconds = uint32_t{data[1]} | uint32_t{data[2]} << 8 | uint32_t{data[3]} << 16 |
                     uint32_t{data[4]} << 24;
  WallTime received = FromUnixMillis(int64_t{seconds} * 1000);
  std::string_view rest(reinterpret_cast<const char*>(data + 5), size - 5);
  HttpHeaders headers;
  while (!rest.empty() && headers.size() < 64) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      headers.push_back({std::string(line.substr(0, colon)), std::string(line.substr(colon + 1))});
    } else if (!line.empty()) {
      auto pick = static_cast<unsigned char>(line[0]);
      headers.push_back(
          {std::string(kNames[pick % std::size(kNames)]), std::string(line.substr(1))});
    }
  }
  RateLimitHeaders h = ParseRateLimitHeaders(headers, status, received);
  auto in_range = [](const std::optional<Millis>& d) {
    return !d.has_value() || (*d >= Millis(0) && *d <= kMaxRateLimitWait);
  };
  auto non_negative = [](const std::optional<int64_t>& n) { return !n.has_value() || *n >= 0; };
  return in_range(h.retry_after) && in_range(h.reset_after) && in_range(h.SuggestedWait()) &&
         non_negative(h.limit) && non_negative(h.remaining) && non_negative(h.policy_quota) &&
         (!h.reset_at.has_value() || *h.reset_at <= received + kMaxRateLimitWait) &&
         (!h.policy_window.has_value() || h.policy_window->count() > 0) &&
         (!h.bucket.has_value() || (!h.bucket->empty() && h.bucket->size() <= 128)) &&
         (!h.policy_name.has_value() || h.policy_name->size() <= 128) && h.http_status == status;
}

}  // namespace egress::adapters
