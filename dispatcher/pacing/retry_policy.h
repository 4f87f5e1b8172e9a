#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/random.h"
#include "dispatcher/pacing/classify.h"
#include "dispatcher/pacing/defer_reason.h"

namespace egress::pacing {

// How a platform profile retries transient failures ([platforms.<p>.retry] in config).
struct RetryPolicy {
  // Fixed delays: the n-th consumed attempt waits schedule[n-1] (the last entry repeats). When
  // empty, exponential backoff with full jitter: uniform in [0, min(max_backoff, base * 2^(n-1))].
  std::vector<Millis> schedule;
  Millis base_backoff{1000};
  Millis max_backoff{600'000};
  // Attempts that may be consumed (the first try counts). Default: 10.
  int max_attempts = 10;
  // A delivery older than this goes dead at its next transient failure. Default: 24 h.
  Millis max_age{86'400'000};
  // The wait after a 429 or throttle that carries no Retry-After. Default: 1 s.
  Millis throttle_wait{1000};
};

// What the service knows of the delivery when its attempt ends.
struct AttemptInfo {
  // Attempts consumed before this one (rate-limited attempts are not counted).
  int attempts_consumed = 0;
  // When the delivery was accepted (persisted wall time).
  WallTime created{};
};

enum class VerdictKind : uint8_t { kDelivered, kDefer, kDead };

// The decision for one finished attempt, to persist: delivered, deferred until `next_attempt`
// for `deferral`, or dead for `dead_reason`.
struct Verdict {
  VerdictKind kind = VerdictKind::kDelivered;
  OutcomeClass outcome_class = OutcomeClass::kDelivered;
  // Whether this attempt counts toward max_attempts (false for rate-limit waits).
  bool consumes_attempt = false;
  SteadyTime next_attempt{};
  Deferral deferral;
  std::string dead_reason;
};

// Pure retry scheduling for a classified outcome: delivered stays delivered; dead-letter is dead
// with the platform's code; budget-exhausted defers for Retry-After (or throttle_wait) without
// consuming an attempt; retry consumes one and defers for the backoff, or goes dead when
// max_attempts or max_age is reached. `random` is drawn only for jittered backoff.
Verdict PlanRetry(const RetryPolicy& policy, const DeliveryOutcome& outcome,
                  const AttemptInfo& info, SteadyTime now, WallTime wall_now, Random& random);

// The backoff before the next try after `attempts_consumed` consumed attempts (>= 1).
Millis BackoffDelay(const RetryPolicy& policy, int attempts_consumed, Random& random);

}  // namespace egress::pacing
