#include "dispatcher/pacing/timer_heap.h"

#include <set>

#include <gtest/gtest.h>

#include "dispatcher/base/random.h"

namespace egress::pacing {
namespace {

// Verifies that interleaved pushes and pops always surface the earliest time, with many ties.
TEST(TimerHeapTest, PopsInTimeOrder) {
  TimerHeap heap;
  SplitMixRandom random(3);
  std::multiset<int64_t> model;
  for (int step = 0; step < 100'000; ++step) {
    if (model.empty() || random.Next() % 3 != 0) {
      const auto at = static_cast<int64_t>(random.Next() % 1000);
      heap.Push(at, static_cast<uint32_t>(step), 0);
      model.insert(at);
      continue;
    }
    ASSERT_EQ(heap.Top().at_ns, *model.begin());
    model.erase(model.begin());
    heap.Pop();
    ASSERT_EQ(heap.size(), model.size());
  }
  for (int64_t at : model) {
    ASSERT_EQ(heap.Top().at_ns, at);
    heap.Pop();
  }
  EXPECT_TRUE(heap.empty());
}

}  // namespace
}  // namespace egress::pacing
