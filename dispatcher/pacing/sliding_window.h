#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace egress::pacing {

// At most `limit` sends in any interval of `window_ns`: the times of the last `limit` sends, so
// the next may go once the oldest of them is a window old. Safe against a platform that counts
// fixed windows of that length starting anywhere (Discord's global 50 per second; the simulator
// and @discordjs/rest start one at the first request after the last one ended) and against a
// sliding one. Memory: 8 bytes × limit (limit is at most kMaxLimit). Not thread-safe.
class SlidingWindow {
 public:
  static constexpr int64_t kMaxLimit = 1000;

  // `limit` in [1, kMaxLimit], `window_ns` > 0 (clamped into range).
  SlidingWindow(int64_t limit, int64_t window_ns);

  // The earliest time at or after `now_ns` when one more send stays within the limit.
  int64_t NextAllowed(int64_t now_ns) const;
  // Counts a send at `now_ns` (times must not go backwards).
  void Record(int64_t now_ns);
  // Nothing counted within the window before `now_ns`: the state equals a fresh one's.
  bool Idle(int64_t now_ns) const;

 private:
  std::vector<int64_t> times_;  // a ring of the last sends, oldest at next_ once full
  size_t next_ = 0;
  int64_t window_ns_;
};

}  // namespace egress::pacing
