#include "dispatcher/pacing/sliding_window_counter.h"

#include <algorithm>

#include "dispatcher/base/saturating.h"

namespace egress::pacing {

WindowShape WindowShape::Of(int64_t window_ms, int64_t slices) {
  window_ms = std::max<int64_t>(1, window_ms);
  slices = std::max<int64_t>(1, slices);
  return WindowShape{window_ms, std::max<int64_t>(1, (window_ms + slices - 1) / slices)};
}

int64_t WindowShape::ExpiryOf(int64_t now_ms) const {
  const int64_t slice = std::max<int64_t>(1, slice_ms);
  // Floor division, so times before 1970 (a broken clock) still fall in one slice.
  int64_t index = now_ms / slice;
  if (now_ms < 0 && now_ms % slice != 0) {
    --index;
  }
  return SatAdd(SatMul(SatAdd(index, 1), slice), window_ms);
}

void SlidingWindowCounter::Add(int64_t expires_ms, int64_t units) {
  if (units == 0) {
    return;
  }
  auto it = std::lower_bound(slices_.begin(), slices_.end(), expires_ms,
                             [](const Slice& s, int64_t e) { return s.expires_ms < e; });
  if (it == slices_.end() || it->expires_ms != expires_ms) {
    slices_.insert(it, Slice{expires_ms, units});
    return;
  }
  it->units = SatAdd(it->units, units);
  if (it->units == 0) {
    slices_.erase(it);
  }
}

int64_t SlidingWindowCounter::Used(int64_t now_ms) const {
  int64_t used = 0;
  for (const Slice& s : slices_) {
    if (s.expires_ms > now_ms && s.units > 0) {
      used = SatAdd(used, s.units);
    }
  }
  return used;
}

WindowDecision SlidingWindowCounter::Decide(int64_t now_ms, int64_t units, int64_t limit) const {
  WindowDecision d;
  d.used = Used(now_ms);
  for (auto it = slices_.rbegin(); it != slices_.rend(); ++it) {
    if (it->expires_ms > now_ms && it->units > 0) {
      d.reset_after_ms = it->expires_ms - now_ms;
      break;
    }
  }
  if (SatAdd(d.used, units) <= limit) {
    d.allowed = true;
    d.remaining = limit - d.used - units;
    return d;
  }
  if (units > limit) {
    d.retry_after_ms = -1;
    return d;
  }
  // The oldest slices leave first: wait for the one after which the request fits.
  int64_t left = d.used;
  for (const Slice& s : slices_) {
    if (s.expires_ms <= now_ms || s.units <= 0) {
      continue;
    }
    left -= s.units;
    if (SatAdd(left, units) <= limit) {
      d.retry_after_ms = s.expires_ms - now_ms;
      return d;
    }
  }
  d.retry_after_ms = d.reset_after_ms;  // unreachable: with every slice gone, units <= limit fit
  return d;
}

void SlidingWindowCounter::Prune(int64_t now_ms) {
  auto keep = std::find_if(slices_.begin(), slices_.end(),
                           [now_ms](const Slice& s) { return s.expires_ms > now_ms; });
  slices_.erase(slices_.begin(), keep);
}

}  // namespace egress::pacing
