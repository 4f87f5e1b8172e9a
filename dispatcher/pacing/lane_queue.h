#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "dispatcher/pacing/priority.h"

namespace egress::pacing {

// Waiters of one place, most urgent first (docs/pacing.md, "Priority"): `high` ones before
// `normal` ones, `normal` before `bulk`, arrival order within a priority. One deque kept in
// priority order rather than one per priority: a libstdc++ deque allocates about 600 bytes when
// made, and the waiters of one place are mostly of one priority, so an insert lands at or near
// an end. The connection budget's waiters (a tenant's destinations waiting for a slot of an
// origin, its requests waiting for a connection) use it; the Scheduler's scope waiters are
// intrusive lists (WaitLanes).
template <typename T>
class LaneQueue {
 public:
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }

  // Behind the waiters of its priority (and ahead of the less urgent ones).
  void PushBack(T value, Priority priority) {
    const uint8_t lane = Lane(priority);
    auto at = std::upper_bound(entries_.begin(), entries_.end(), lane,
                               [](uint8_t l, const Entry& e) { return l < e.lane; });
    entries_.insert(at, Entry{value, lane});
  }
  // Ahead of the waiters of its priority (one that gave back what it had been granted).
  void PushFront(T value, Priority priority) {
    const uint8_t lane = Lane(priority);
    auto at = std::lower_bound(entries_.begin(), entries_.end(), lane,
                               [](const Entry& e, uint8_t l) { return e.lane < l; });
    entries_.insert(at, Entry{value, lane});
  }
  const T& front() const { return entries_.front().value; }
  void pop_front() { entries_.pop_front(); }
  // Moves `value` to the back of `priority`'s waiters (its head changed priority while it
  // waited); false when it does not wait here.
  bool Move(const T& value, Priority priority) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.value == value; });
    if (it == entries_.end()) {
      return false;
    }
    entries_.erase(it);
    PushBack(value, priority);
    return true;
  }

 private:
  struct Entry {
    T value;
    uint8_t lane;
  };
  static uint8_t Lane(Priority priority) { return static_cast<uint8_t>(PriorityLane(priority)); }

  std::deque<Entry> entries_;
};

}  // namespace egress::pacing
