#include "dispatcher/pacing/timer_heap.h"

namespace egress::pacing {
namespace {

// Children per node: a 4-ary heap is half as deep as a binary one, and a node's four children
// share one cache line.
constexpr size_t kArity = 4;

}  // namespace

void TimerHeap::Push(int64_t at_ns, uint32_t id, uint32_t generation) {
  const Entry entry{at_ns, id, generation};
  size_t hole = entries_.size();
  entries_.emplace_back();
  while (hole > 0) {
    const size_t parent = (hole - 1) / kArity;
    if (entries_[parent].at_ns <= at_ns) {
      break;
    }
    entries_[hole] = entries_[parent];
    hole = parent;
  }
  entries_[hole] = entry;
}

void TimerHeap::Pop() {
  const Entry last = entries_.back();
  entries_.pop_back();
  const size_t size = entries_.size();
  if (size == 0) {
    return;
  }
  // Sift the last entry down from the root, stopping as soon as no child is earlier.
  size_t hole = 0;
  while (true) {
    const size_t first = hole * kArity + 1;
    if (first >= size) {
      break;
    }
    size_t best = first;
    const size_t end = first + kArity < size ? first + kArity : size;
    for (size_t c = first + 1; c < end; ++c) {
      if (entries_[c].at_ns < entries_[best].at_ns) {
        best = c;
      }
    }
    if (entries_[best].at_ns >= last.at_ns) {
      break;
    }
    entries_[hole] = entries_[best];
    hole = best;
  }
  entries_[hole] = last;
}

}  // namespace egress::pacing
