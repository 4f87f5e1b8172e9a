#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "dispatcher/base/clock.h"

namespace egress::pacing {

// How an attempt ended at the transport, before any decision.
enum class TransportResult : uint8_t {
  kResponse,      // an HTTP response arrived (see http_status)
  kConnectError,  // DNS, connect or TLS failure
  kTimeout,       // no complete response in time
  kCancelled,     // the attempt was aborted locally (shutdown)
};

// What an adapter reports after one attempt.
struct DeliveryOutcome {
  TransportResult transport = TransportResult::kResponse;
  int http_status = 0;
  // The adapter read a throttle in the body (Slack 200 {"ok":false,"error":"ratelimited"}).
  bool throttled = false;
  // The adapter knows this can never succeed (Slack invalid_auth, Discord 10015, LINE 400).
  bool permanent = false;
  // The adapter knows the platform accepted it despite the status (LINE 409 retry key accepted).
  bool accepted = false;
  // The adapter knows the failure passes whatever the status says (a profile's retry rule, such
  // as one for 412): retried on the schedule.
  bool transient = false;
  // The wait the platform asked for (Retry-After, Discord body retry_after).
  std::optional<Millis> retry_after;
  // The platform's error code, kept for the dead reason ("invalid_auth", "10015").
  std::string platform_error;
  // A transient failure with a name of its own ("tls_rejected"): the dead reason when the retry
  // schedule runs out on it, instead of max_attempts / max_age.
  std::string exhausted_reason;
};

}  // namespace egress::pacing
