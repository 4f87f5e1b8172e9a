#pragma once

#include <chrono>

#include "dispatcher/base/clock.h"

namespace egress::sim {

// A token bucket that refills lazily from elapsed steady time (Envoy TokenBucketImpl): `burst`
// tokens at most, `rate_per_s` tokens added per second. Never sleeps, owns no timer; callers pass
// the time. A rate <= 0 means unlimited. Not thread-safe: the Simulator serialises access.
class TokenBucket {
 public:
  TokenBucket(double rate_per_s, double burst, SteadyTime now);

  // How long until a token is available at `now`; zero when one is. Takes nothing.
  std::chrono::nanoseconds WaitFor(SteadyTime now);

  // Takes one token; call only after WaitFor returned zero.
  void Take(SteadyTime now);

  // Takes one token if one is available at `now` and returns zero; otherwise takes nothing and
  // returns how long until a token will be available.
  std::chrono::nanoseconds TryTake(SteadyTime now);

  // Tokens left at `now` (after refill), rounded down.
  int Remaining(SteadyTime now);

 private:
  void Refill(SteadyTime now);

  double rate_per_s_;
  double burst_;
  double tokens_;
  SteadyTime last_;
};

}  // namespace egress::sim
