#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <variant>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "tests/simulator/fixed_window.h"
#include "tests/simulator/sliding_window.h"
#include "tests/simulator/token_bucket.h"

namespace egress::sim {

// The shapes a platform's undisclosed limit may have. Platforms that state no limit in their
// answers (LINE) meter somehow; pacing that converges on one shape only is tuned to a
// simulator, so the simulator hides any of these (docs/simulator.md, "Hidden limits").
enum class LimitShape {
  kFixedWindow,  // `rate * window` requests per window; a window starts at the first request
                 // after the previous one ended (FixedWindow)
  kTokenBucket,  // GCRA / token bucket: `burst` at once, refilled at `rate` (TokenBucket)
  kSlidingLog,   // at most `rate * window` requests in any window (SlidingWindow)
};

Result<LimitShape> ParseLimitShape(std::string_view text);
std::string_view LimitShapeString(LimitShape shape);

// What a hidden limit is: its shape, its rate, a token bucket's burst and a window's length.
struct HiddenLimitSpec {
  LimitShape shape = LimitShape::kFixedWindow;
  double rate_per_s = 0;     // <= 0: unlimited
  int burst = 1;             // kTokenBucket only
  int64_t window_ms = 1000;  // kFixedWindow and kSlidingLog: rate * window per window

  // Requests a window admits: rate * window, at least 1.
  int WindowLimit() const;
};

// One key's hidden limit: the simulator's limiter of its shape. Not thread-safe: the Simulator
// serialises access.
class HiddenLimit {
 public:
  HiddenLimit(const HiddenLimitSpec& spec, SteadyTime now);

  // Takes one request at `now` when the limit has room; false (nothing taken) otherwise.
  bool TryTake(SteadyTime now);

 private:
  std::variant<FixedWindow, TokenBucket, SlidingWindow> limiter_;
};

}  // namespace egress::sim
