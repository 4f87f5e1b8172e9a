#pragma once

#include <chrono>

#include "dispatcher/base/clock.h"

namespace egress::sim {

// A fixed-window counter in the manner of Discord buckets and LINE's per-second limits: `limit`
// requests per `window`; the window starts at the first request after the previous one ended.
// A limit <= 0 means unlimited. Not thread-safe: the Simulator serialises access.
class FixedWindow {
 public:
  struct Outcome {
    bool allowed = true;
    int limit = 0;
    int remaining = 0;                        // after this request
    std::chrono::nanoseconds reset_after{0};  // until the window ends
  };

  FixedWindow(int limit, std::chrono::nanoseconds window);

  // Counts one request at `now` if the window has room.
  Outcome Take(SteadyTime now);

  // The state at `now` without taking anything.
  Outcome Peek(SteadyTime now);

 private:
  void Roll(SteadyTime now);

  int limit_;
  std::chrono::nanoseconds window_;
  int used_ = 0;
  bool started_ = false;
  SteadyTime window_end_{};
};

}  // namespace egress::sim
