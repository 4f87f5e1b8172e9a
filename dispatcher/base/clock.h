#pragma once

#include <chrono>
#include <cstdint>

namespace egress {

using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;
using Millis = std::chrono::milliseconds;

// Time is injected everywhere (CONTRIBUTING.md). Now() is steady: use it for rates and timeouts.
// WallNow() is the system clock: use it for anything persisted, since steady time means nothing
// after a restart. SystemClock is the production implementation; tests use FakeClock
// (tests/support/fake_clock.h). Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyTime Now() const = 0;
  virtual WallTime WallNow() const = 0;
};

// The real clocks. The only place in the project that calls ::now().
class SystemClock final : public Clock {
 public:
  SteadyTime Now() const override;
  WallTime WallNow() const override;
};

// Milliseconds since the Unix epoch, the unit every persisted time uses.
inline int64_t ToUnixMillis(WallTime t) {
  return std::chrono::duration_cast<Millis>(t.time_since_epoch()).count();
}
inline WallTime FromUnixMillis(int64_t ms) { return WallTime(Millis(ms)); }
// Nanoseconds as whole milliseconds, rounded up (a wait never ends before it should).
inline Millis CeilMillis(int64_t ns) { return Millis((ns + 999'999) / 1'000'000); }

}  // namespace egress
