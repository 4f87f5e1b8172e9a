#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include <nlohmann/json.hpp>

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

  // Lateness beyond this (here or in the simulator's loop) is more than the pacing margin leaves
  // room for: a timing test's run that stalled longer is held to looser bounds, or not judged.
  static constexpr int64_t kJudgedMs = 30;

  // The longest oversleep seen so far.
  std::chrono::milliseconds worst() const {
    return std::chrono::milliseconds(worst_ms_.load(std::memory_order_relaxed));
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> worst_ms_{0};
  std::thread thread_;
};

// The longer of `watch`'s worst and the simulator's loop_late_max_ms in `sim_stats` (GET
// /_sim/stats), in ms; printed with both.
int64_t LongestStallMs(const StallWatch& watch, const nlohmann::json& sim_stats);

}  // namespace egress
