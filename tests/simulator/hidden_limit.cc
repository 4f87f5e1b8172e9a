#include "tests/simulator/hidden_limit.h"

#include <algorithm>
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

HiddenLimit::HiddenLimit(const HiddenLimitSpec& spec, SteadyTime now)
    : spec_(spec),
      window_(std::chrono::milliseconds(std::max<int64_t>(1, spec.window_ms))),
      tokens_(std::max(1, spec.burst)),
      last_(now) {}

void HiddenLimit::Expire(SteadyTime now) {
  while (!taken_.empty() && taken_.front() + window_ <= now) {
    taken_.pop_front();
  }
}

bool HiddenLimit::TryTake(SteadyTime now) {
  if (spec_.rate_per_s <= 0) {
    return true;
  }
  switch (spec_.shape) {
    case LimitShape::kTokenBucket: {
      if (now > last_) {
        const double elapsed_s = std::chrono::duration<double>(now - last_).count();
        tokens_ =
            std::min<double>(std::max(1, spec_.burst), tokens_ + elapsed_s * spec_.rate_per_s);
        last_ = now;
      }
      if (tokens_ < 1.0) {
        return false;
      }
      tokens_ -= 1.0;
      return true;
    }
    case LimitShape::kFixedWindow:
      if (!started_ || now >= window_end_) {
        started_ = true;
        used_ = 0;
        window_end_ = now + window_;
      }
      if (used_ >= spec_.WindowLimit()) {
        return false;
      }
      ++used_;
      return true;
    case LimitShape::kSlidingLog:
      Expire(now);
      if (static_cast<int>(taken_.size()) >= spec_.WindowLimit()) {
        return false;
      }
      taken_.push_back(now);
      return true;
  }
  return false;
}

}  // namespace egress::sim
