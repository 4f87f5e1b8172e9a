#pragma once

#include <chrono>
#include <deque>

#include "dispatcher/base/clock.h"

namespace egress::sim {

// A sliding-window log in the manner of Telegram's per-group and Microsoft Teams' per-thread
// limits: at most `limit` requests in any `window` of time. A request taken at t counts until
// t + window (exclusive). A limit <= 0 means unlimited. Keeps the times of the requests still
// inside the window (at most `limit` of them). Not thread-safe: the Simulator serialises access.
class SlidingWindow {
 public:
  SlidingWindow(int limit, std::chrono::nanoseconds window);

  // How long until the window has room at `now`; zero when it has. Takes nothing.
  std::chrono::nanoseconds WaitFor(SteadyTime now);

  // Counts one request at `now`; call only after WaitFor returned zero.
  void Take(SteadyTime now);

  // Takes one request if the window has room at `now` and returns zero; otherwise takes
  // nothing and returns how long until it will have room.
  std::chrono::nanoseconds TryTake(SteadyTime now);

  // Requests the window still has room for at `now`; 0 when unlimited.
  int Remaining(SteadyTime now);

 private:
  void Expire(SteadyTime now);

  int limit_;
  std::chrono::nanoseconds window_;
  std::deque<SteadyTime> taken_;  // oldest first
};

}  // namespace egress::sim
