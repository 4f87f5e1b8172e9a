#include "dispatcher/pacing/sliding_window.h"

#include <algorithm>

namespace egress::pacing {

SlidingWindow::SlidingWindow(int64_t limit, int64_t window_ns)
    : window_ns_(std::max<int64_t>(1, window_ns)) {
  times_.reserve(static_cast<size_t>(std::clamp<int64_t>(limit, 1, kMaxLimit)));
}

int64_t SlidingWindow::NextAllowed(int64_t now_ns) const {
  if (times_.size() < times_.capacity()) {
    return now_ns;
  }
  return std::max(now_ns, times_[next_] + window_ns_);
}

void SlidingWindow::Record(int64_t now_ns) {
  if (times_.size() < times_.capacity()) {
    times_.push_back(now_ns);
    return;
  }
  times_[next_] = now_ns;
  next_ = (next_ + 1) % times_.size();
}

bool SlidingWindow::Idle(int64_t now_ns) const {
  if (times_.empty()) {
    return true;
  }
  const size_t newest = times_.size() < times_.capacity()
                            ? times_.size() - 1
                            : (next_ + times_.size() - 1) % times_.size();
  return now_ns - times_[newest] >= window_ns_;
}

}  // namespace egress::pacing
