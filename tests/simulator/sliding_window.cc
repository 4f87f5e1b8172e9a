#include "tests/simulator/sliding_window.h"

#include <algorithm>

namespace egress::sim {

SlidingWindow::SlidingWindow(int limit, std::chrono::nanoseconds window)
    : limit_(limit), window_(std::max(window, std::chrono::nanoseconds(1))) {}

void SlidingWindow::Expire(SteadyTime now) {
  while (!taken_.empty() && now - taken_.front() >= window_) {
    taken_.pop_front();
  }
}

std::chrono::nanoseconds SlidingWindow::WaitFor(SteadyTime now) {
  if (limit_ <= 0) {
    return std::chrono::nanoseconds(0);
  }
  Expire(now);
  if (static_cast<int>(taken_.size()) < limit_) {
    return std::chrono::nanoseconds(0);
  }
  // Room comes when all but limit - 1 of the requests inside the window have left it.
  const SteadyTime leaves = taken_[taken_.size() - static_cast<size_t>(limit_)] + window_;
  return leaves - now;
}

void SlidingWindow::Take(SteadyTime now) {
  if (limit_ <= 0) {
    return;
  }
  Expire(now);
  taken_.push_back(now);
}

std::chrono::nanoseconds SlidingWindow::TryTake(SteadyTime now) {
  std::chrono::nanoseconds wait = WaitFor(now);
  if (wait.count() == 0) {
    Take(now);
  }
  return wait;
}

int SlidingWindow::Remaining(SteadyTime now) {
  if (limit_ <= 0) {
    return 0;
  }
  Expire(now);
  return std::max(0, limit_ - static_cast<int>(taken_.size()));
}

}  // namespace egress::sim
