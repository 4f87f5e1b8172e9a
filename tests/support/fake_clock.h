#pragma once

#include <atomic>
#include <chrono>

#include "dispatcher/base/clock.h"

namespace egress {

// A clock that moves only when told. Both time lines advance together. Thread-safe.
class FakeClock final : public Clock {
 public:
  // Starts at 2026-01-01T00:00:00Z on the wall clock and at an arbitrary steady origin.
  FakeClock() : steady_ns_(1'000'000'000'000), wall_ns_(1'767'225'600'000'000'000) {}

  SteadyTime Now() const override {
    return SteadyTime(std::chrono::nanoseconds(steady_ns_.load()));
  }
  WallTime WallNow() const override {
    return WallTime(
        std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(wall_ns_.load())));
  }

  template <class Rep, class Period>
  void Advance(std::chrono::duration<Rep, Period> d) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    steady_ns_ += ns;
    wall_ns_ += ns;
  }

  void SetWallMillis(int64_t ms) { wall_ns_ = ms * 1'000'000; }

 private:
  std::atomic<int64_t> steady_ns_;
  std::atomic<int64_t> wall_ns_;
};

}  // namespace egress
