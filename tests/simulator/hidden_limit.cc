#include "tests/simulator/hidden_limit.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace egress::sim {

Result<LimitShape> ParseLimitShape(std::string_view text) {
  if (text == "fixed_window") {
    return LimitShape::kFixedWindow;
  }
  if (text == "token_bucket") {
    return LimitShape::kTokenBucket;
  }
  if (text == "sliding_log") {
    return LimitShape::kSlidingLog;
  }
  return Status::InvalidArgument("shape must be fixed_window, token_bucket or sliding_log");
}

std::string_view LimitShapeString(LimitShape shape) {
  switch (shape) {
    case LimitShape::kFixedWindow:
      return "fixed_window";
    case LimitShape::kTokenBucket:
      return "token_bucket";
    case LimitShape::kSlidingLog:
      return "sliding_log";
  }
  return "fixed_window";
}

int HiddenLimitSpec::WindowLimit() const {
  const double n = std::floor(rate_per_s * static_cast<double>(window_ms) / 1000.0 + 1e-9);
  return static_cast<int>(std::clamp(n, 1.0, 1e9));
}

namespace {

std::variant<FixedWindow, TokenBucket, SlidingWindow> MakeLimiter(const HiddenLimitSpec& spec,
                                                                  SteadyTime now) {
  // rate <= 0: unlimited, which each limiter says with a limit (or rate) of 0.
  const int per_window = spec.rate_per_s > 0 ? spec.WindowLimit() : 0;
  const std::chrono::milliseconds window(std::max<int64_t>(1, spec.window_ms));
  switch (spec.shape) {
    case LimitShape::kTokenBucket:
      return TokenBucket(std::max(0.0, spec.rate_per_s), std::max(1, spec.burst), now);
    case LimitShape::kSlidingLog:
      return SlidingWindow(per_window, window);
    case LimitShape::kFixedWindow:
      break;
  }
  return FixedWindow(per_window, window);
}

}  // namespace

HiddenLimit::HiddenLimit(const HiddenLimitSpec& spec, SteadyTime now)
    : limiter_(MakeLimiter(spec, now)) {}

bool HiddenLimit::TryTake(SteadyTime now) {
  if (auto* window = std::get_if<FixedWindow>(&limiter_)) {
    return window->Take(now).allowed;
  }
  if (auto* bucket = std::get_if<TokenBucket>(&limiter_)) {
    return bucket->TryTake(now).count() == 0;
  }
  return std::get<SlidingWindow>(limiter_).TryTake(now).count() == 0;
}

}  // namespace egress::sim
