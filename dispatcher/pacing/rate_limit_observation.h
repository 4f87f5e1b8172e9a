#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "dispatcher/base/clock.h"

namespace egress::pacing {

// The Discord X-RateLimit-Scope of a 429 (other platforms leave kUnknown).
enum class RateLimitScope : uint8_t { kUnknown, kUser, kGlobal, kShared };

// What one response taught about a destination's budget, already parsed by the adapters'
// header parser (relative times, so clock skew does not matter). Every field is optional.
struct RateLimitObservation {
  // Bucket size (X-RateLimit-Limit, RateLimit-Policy q) and its window when known (RateLimit-
  // Policy w). A learned limit replaces the configured default for the destination's own key;
  // without a window the budget's configured scale is kept.
  std::optional<int64_t> limit;
  std::optional<Millis> window;
  // Units left and the time until the window resets. remaining == 0 with a reset parks the
  // destination's own key until then (plus SchedulerOptions::reset_offset).
  std::optional<int64_t> remaining;
  std::optional<Millis> reset_after;
  // Retry-After (or Discord's body retry_after). Parks the key the platform's 429 covers: the
  // token for a global 429, else the destination's key (Slack: the workspace).
  std::optional<Millis> retry_after;
  // Discord X-RateLimit-Global / X-RateLimit-Scope.
  bool global = false;
  RateLimitScope scope = RateLimitScope::kUnknown;
  // Discord X-RateLimit-Bucket: routes reporting one bucket share one meter.
  std::string bucket;
};

}  // namespace egress::pacing
