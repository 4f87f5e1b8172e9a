#pragma once

#include <cstdint>

#include "dispatcher/pacing/delivery_outcome.h"

namespace egress::pacing {

// What an outcome means, before any scheduling (Envoy RetryStatus habits).
enum class OutcomeClass : uint8_t {
  kDelivered,        // 2xx, or accepted by the platform (LINE 409)
  kRetry,            // transient: 408, 5xx, connect errors, timeouts, local cancel
  kDeadLetter,       // permanent: other 4xx, 3xx, or what the adapter marked permanent
  kBudgetExhausted,  // the platform's rate budget is spent (429 or a body throttle): wait, no
                     // attempt consumed
};

// Pure: the class of an outcome. The adapter's `permanent` wins over the status, then
// `accepted`, then `throttled`.
OutcomeClass Classify(const DeliveryOutcome& outcome);

}  // namespace egress::pacing
