#include "tests/simulator/fixed_window.h"

#include <algorithm>

namespace egress::sim {

FixedWindow::FixedWindow(int limit, std::chrono::nanoseconds window)
    : limit_(limit), window_(std::max(window, std::chrono::nanoseconds(1))) {}

void FixedWindow::Roll(SteadyTime now) {
  if (!started_ || now >= window_end_) {
    started_ = true;
    used_ = 0;
    window_end_ = now + window_;
  }
}

FixedWindow::Outcome FixedWindow::Peek(SteadyTime now) {
  Roll(now);
  Outcome out;
  out.limit = limit_;
  out.remaining = limit_ <= 0 ? 0 : std::max(0, limit_ - used_);
  out.reset_after = window_end_ - now;
  out.allowed = limit_ <= 0 || used_ < limit_;
  return out;
}

FixedWindow::Outcome FixedWindow::Take(SteadyTime now) {
  Outcome out = Peek(now);
  if (out.allowed) {
    ++used_;
    if (limit_ > 0) {
      out.remaining = limit_ - used_;
    }
  }
  return out;
}

}  // namespace egress::sim
