#include "tests/support/stall_watch.h"

#include <algorithm>
#include <cstdio>

#include "dispatcher/base/clock.h"

namespace egress {

StallWatch::StallWatch(std::chrono::milliseconds tick)
    : thread_([this, tick] {
        const SystemClock clock;
        while (!stop_.load(std::memory_order_relaxed)) {
          const SteadyTime before = clock.Now();
          std::this_thread::sleep_for(tick);
          const auto late =
              std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now() - before - tick);
          if (late.count() > worst_ms_.load(std::memory_order_relaxed)) {
            worst_ms_.store(late.count(), std::memory_order_relaxed);
          }
        }
      }) {}

StallWatch::~StallWatch() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

int64_t LongestStallMs(const StallWatch& watch, const nlohmann::json& sim_stats) {
  const int64_t ours = watch.worst().count();
  const int64_t sim = sim_stats.value("loop_late_max_ms", int64_t{0});
  std::printf("longest stall: %lld ms here, %lld ms in the simulator's loop\n",
              static_cast<long long>(ours), static_cast<long long>(sim));
  return std::max(ours, sim);
}

}  // namespace egress
