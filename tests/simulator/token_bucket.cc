#include "tests/simulator/token_bucket.h"

#include <algorithm>
#include <cmath>

namespace egress::sim {

TokenBucket::TokenBucket(double rate_per_s, double burst, SteadyTime now)
    : rate_per_s_(rate_per_s), burst_(std::max(burst, 1.0)), tokens_(burst_), last_(now) {}

void TokenBucket::Refill(SteadyTime now) {
  if (now <= last_) {
    return;
  }
  double elapsed_s = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed_s * rate_per_s_);
  last_ = now;
}

std::chrono::nanoseconds TokenBucket::WaitFor(SteadyTime now) {
  if (rate_per_s_ <= 0) {
    return std::chrono::nanoseconds(0);
  }
  Refill(now);
  if (tokens_ >= 1.0) {
    return std::chrono::nanoseconds(0);
  }
  double wait_s = (1.0 - tokens_) / rate_per_s_;
  return std::chrono::nanoseconds(static_cast<int64_t>(std::ceil(wait_s * 1e9)));
}

void TokenBucket::Take(SteadyTime now) {
  if (rate_per_s_ <= 0) {
    return;
  }
  Refill(now);
  tokens_ -= 1.0;
}

std::chrono::nanoseconds TokenBucket::TryTake(SteadyTime now) {
  std::chrono::nanoseconds wait = WaitFor(now);
  if (wait.count() == 0) {
    Take(now);
  }
  return wait;
}

int TokenBucket::Remaining(SteadyTime now) {
  if (rate_per_s_ <= 0) {
    return static_cast<int>(burst_);
  }
  Refill(now);
  return static_cast<int>(std::floor(tokens_));
}

}  // namespace egress::sim
