#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace egress {

// Watches this process for stalls while a timing test runs: a thread that sleeps `tick` at a
// time and keeps the longest it overslept. Pacing absorbs only so much lateness (the pacing
// margin: 50 ms of the Discord global's 1 s window), so a test that asserts "no 429" over
// loopback asserts it for a run that did not stall beyond that (the simulator reports its own
// loop's lateness in its stats, "loop_late_max_ms").
class StallWatch {
 public:
  explicit StallWatch(std::chrono::milliseconds tick = std::chrono::milliseconds(2));
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // The longest oversleep seen so far.
  std::chrono::milliseconds worst() const {
    return std::chrono::milliseconds(worst_ms_.load(std::memory_order_relaxed));
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> worst_ms_{0};
  std::thread thread_;
};

}  // namespace egress
