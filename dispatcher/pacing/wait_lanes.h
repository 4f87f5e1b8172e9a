#pragma once

#include <array>
#include <cstdint>

#include "dispatcher/pacing/priority.h"

namespace egress::pacing {

// Destinations waiting in one place (a shared scope's refill, a tenant's turn on a platform):
// one intrusive FIFO per priority, linked through the scheduler's destinations. The first
// waiter is the head of the most urgent lane that has one, so a `high` head never waits behind
// `normal` or `bulk` ones, and within a lane the order is arrival. 24 bytes.
static_assert(kPriorityCount == 3, "WaitLanes::empty and front read three lanes");

struct WaitLanes {
  static constexpr uint32_t kNil = UINT32_MAX;

  std::array<uint32_t, kPriorityCount> head{kNil, kNil, kNil};
  std::array<uint32_t, kPriorityCount> tail{kNil, kNil, kNil};

  // kNil is all ones: the lanes are empty when every head is.
  bool empty() const { return (head[0] & head[1] & head[2]) == kNil; }
  // The most urgent lane with a waiter, -1 when none.
  int first_lane() const {
    for (int lane = 0; lane < kPriorityCount; ++lane) {
      if (head[lane] != kNil) {
        return lane;
      }
    }
    return -1;
  }
  // The next waiter, kNil when none.
  uint32_t front() const { return head[0] != kNil ? head[0] : head[1] != kNil ? head[1] : head[2]; }
  // Whether a waiter as urgent as `priority` or more is there: one of that priority arriving
  // now queues behind it.
  bool AnyAtOrAbove(Priority priority) const { return AnyBefore(PriorityLane(priority) + 1); }
  // Whether a waiter more urgent than `priority` is there.
  bool AnyAbove(Priority priority) const { return AnyBefore(PriorityLane(priority)); }

 private:
  bool AnyBefore(int end_lane) const {
    for (int lane = 0; lane < end_lane; ++lane) {
      if (head[lane] != kNil) {
        return true;
      }
    }
    return false;
  }
};

}  // namespace egress::pacing
