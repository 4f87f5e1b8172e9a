#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "adapters/platform_adapter.h"

namespace egress::adapters {

// LINE Messaging API (platforms.md section 3). Requests carry "Authorization: Bearer <channel
// access token>" and "X-Line-Retry-Key: LineRetryKey(delivery id)". The key is derived from the
// delivery id, which is persisted at enqueue, so the key is in effect made at enqueue and stored:
// every attempt of a delivery (also after a restart) sends the same key, and a retry after a
// timeout is answered 409 instead of being sent twice. LINE honours a key for 24 hours from its
// first use; a delivery retried later than that may be sent twice (the retry policy's max_age
// defaults to 24 h).
//   push       payload (a JSON object, "messages": [...]) with "to" set to the destination
//              (a user, group or room id) -> POST {line_base_url}/v2/bot/message/push;
//   multicast  payload whose "to" is an array of 1..500 user ids (the destination is only a
//              label) -> POST {line_base_url}/v2/bot/message/multicast with the payload bytes
//              as they are. More than 500 recipients is InvalidArgument: the intake layer splits
//              with SplitLineMulticast() into one delivery (and so one retry key) per part.
//
// Interpret: 2xx delivered, platform_ref = X-Line-Request-Id. 409 with X-Line-Accepted-Request-Id
// accepted (delivered), platform_ref = that id. Both report actual_cost when the delivery's cost
// is not what LINE counts (docs/costs.md: a multicast's distinct recipients, a push 1). 429 "You
// have reached your monthly limit." throttled until 00:00 UTC on the first of the next month (from
// received_at), platform_error "monthly_limit"; any other 429 throttled, platform_error
// "rate_limited", with no retry_after unless a Retry-After came (LINE sends none; the pacing
// engine's adaptive backoff decides). 401 dead + invalidate_credential. 5xx retried; other 3xx/4xx
// dead with http_<status> and LINE's message as the detail.
//
// Immutable after construction; safe from any thread.
class LineAdapter final : public PlatformAdapter {
 public:
  explicit LineAdapter(PlatformEndpoints endpoints);

  Platform platform() const override { return Platform::kLine; }
  Status CheckDestination(std::string_view destination) const override;

  // InvalidArgument for a malformed destination or payload, a multicast over 500 recipients or a
  // delivery without an id; FailedPrecondition when the credential has no token.
  Result<HttpRequest> BuildRequest(const storage::Delivery& delivery, const Credential& credential,
                                   WallTime now) const override;

  AttemptReport Interpret(const storage::Delivery& delivery, const Result<HttpResponse>& response,
                          WallTime received_at) const override;

 private:
  PlatformEndpoints endpoints_;
};

// LINE's limit of recipients per multicast request.
inline constexpr size_t kLineMulticastMaxRecipients = 500;

// LINE's 429 body message when the monthly message quota is spent.
inline constexpr std::string_view kLineMonthlyLimitMessage = "You have reached your monthly limit.";

// For the intake layer: splits a multicast payload ({"to": [ids...], ...}) into payloads of at
// most `max_recipients` recipients, in order, every other field copied. A payload without a "to"
// array comes back as it is (one element). InvalidArgument when `payload` is not a JSON object,
// "to" is an empty array or `max_recipients` is 0.
Result<std::vector<std::string>> SplitLineMulticast(
    std::string_view payload, size_t max_recipients = kLineMulticastMaxRecipients);

// The wait from `received_at` until 00:00 UTC on the first day of the next month, when LINE's
// monthly quota can have reset.
Millis UntilNextMonthUtc(WallTime received_at);

}  // namespace egress::adapters
