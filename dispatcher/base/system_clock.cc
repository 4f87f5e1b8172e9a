#include "dispatcher/base/clock.h"

namespace egress {

SteadyTime SystemClock::Now() const { return std::chrono::steady_clock::now(); }

WallTime SystemClock::WallNow() const { return std::chrono::system_clock::now(); }

}  // namespace egress
