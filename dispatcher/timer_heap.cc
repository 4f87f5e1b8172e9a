#include "dispatcher/timer_heap.h"

#include <algorithm>

namespace egress::dispatcher {
namespace {

bool Later(const TimerHeap::Entry& a, const TimerHeap::Entry& b) { return a.at_ns > b.at_ns; }

}  // namespace

void TimerHeap::Push(int64_t at_ns, uint32_t id, uint32_t generation) {
  entries_.push_back({at_ns, id, generation});
  std::push_heap(entries_.begin(), entries_.end(), Later);
}

void TimerHeap::Pop() {
  std::pop_heap(entries_.begin(), entries_.end(), Later);
  entries_.pop_back();
}

}  // namespace egress::dispatcher
