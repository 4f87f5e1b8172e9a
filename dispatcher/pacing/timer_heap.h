#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace egress::pacing {

// A 4-ary min-heap of (time, id, generation) wake-ups, O(log n) per push and pop. Entries are
// never removed early: the owner bumps its generation and drops stale entries when they surface.
// Not thread-safe: all methods run on the dispatcher loop.
class TimerHeap {
 public:
  struct Entry {
    int64_t at_ns = 0;
    uint32_t id = 0;
    uint32_t generation = 0;
  };

  void Push(int64_t at_ns, uint32_t id, uint32_t generation);
  // The earliest entry. The heap must not be empty.
  const Entry& Top() const { return entries_.front(); }
  void Pop();
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<Entry> entries_;
};

}  // namespace egress::pacing
