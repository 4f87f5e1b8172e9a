#include "tests/support/stall_watch.h"

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

}  // namespace egress
