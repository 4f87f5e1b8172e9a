#pragma once

#include <cstdint>
#include <vector>

namespace egress::pacing {

// The shape of a sliding window: `window_ms` long, counted in slices of `slice_ms` (aligned to
// Unix time 0, so a restart finds the same slices). A unit taken at time t is counted until the
// end of its slice plus the window: at least the whole window after t, at most one slice longer.
// So no window of `window_ms` ever holds more than the limit (the boundary burst of a fixed
// window cannot happen), and a tenant sending without pause gets window / (window + slice) of
// its limit (98.4% with the default 60 slices).
struct WindowShape {
  int64_t window_ms = 1000;
  int64_t slice_ms = 17;

  // `window_ms` in `slices` slices (the slice rounded up to a whole ms). Both must be >= 1.
  static WindowShape Of(int64_t window_ms, int64_t slices = kDefaultSlices);
  static constexpr int64_t kDefaultSlices = 60;

  // When units taken at `now_ms` stop counting: the end of now's slice plus the window.
  int64_t ExpiryOf(int64_t now_ms) const;
};

// The answer for `units` more at `now`.
struct WindowDecision {
  bool allowed = false;
  // Units counted at `now` before this request.
  int64_t used = 0;
  // Units that could still pass at `now` (0 when denied).
  int64_t remaining = 0;
  // On denial: the wait until enough units leave the window for this request to pass; -1 when
  // it never can (more units than the limit). 0 when allowed.
  int64_t retry_after_ms = 0;
  // Until every unit counted now has left the window (0 when none is counted).
  int64_t reset_after_ms = 0;
};

// Units counted over a sliding window, kept as slices keyed by the time they stop counting (see
// WindowShape). Pure: every call takes the time; no clock, no I/O. Memory is one entry per slice
// still counted (window / slice + 1 at most, when every Add uses ExpiryOf of the current time)
// plus expired ones until Prune. Not thread-safe.
class SlidingWindowCounter {
 public:
  struct Slice {
    int64_t expires_ms = 0;
    int64_t units = 0;
    friend bool operator==(const Slice&, const Slice&) = default;
  };

  // Adds `units` (negative: a refund) to the slice that stops counting at `expires_ms`; a slice
  // that reaches 0 is dropped.
  void Add(int64_t expires_ms, int64_t units);
  // Units counted at `now_ms` (slices expiring after now; a negative slice counts 0).
  int64_t Used(int64_t now_ms) const;
  // Whether `units` more fit under `limit` at `now_ms`. Changes nothing.
  WindowDecision Decide(int64_t now_ms, int64_t units, int64_t limit) const;
  // Drops the slices that stopped counting at or before `now_ms`.
  void Prune(int64_t now_ms);

  // In expiry order.
  const std::vector<Slice>& slices() const { return slices_; }
  bool empty() const { return slices_.empty(); }

 private:
  std::vector<Slice> slices_;
};

}  // namespace egress::pacing
