#include "tests/support/stall_watch.h"

namespace egress {

StallWatch::StallWatch(std::chrono::milliseconds tick)
    : thread_([this, tick] {
        while (!stop_.load(std::memory_order_relaxed)) {
          const auto before = std::chrono::steady_clock::now();
          std::this_thread::sleep_for(tick);
          const auto late = std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::steady_clock::now() - before - tick);
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
