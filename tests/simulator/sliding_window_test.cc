#include "tests/simulator/sliding_window.h"

#include <chrono>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace egress::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// Verifies the window holds `limit` requests and asks for the wait until its oldest one leaves.
TEST(SimSlidingWindowTest, WaitsForTheOldestRequestToLeave) {
  FakeClock clock;
  SlidingWindow window(3, seconds(60));
  EXPECT_EQ(window.TryTake(clock.Now()), nanoseconds(0));
  clock.Advance(seconds(10));
  EXPECT_EQ(window.TryTake(clock.Now()), nanoseconds(0));
  clock.Advance(seconds(10));
  EXPECT_EQ(window.Remaining(clock.Now()), 1);
  EXPECT_EQ(window.TryTake(clock.Now()), nanoseconds(0));
  EXPECT_EQ(window.Remaining(clock.Now()), 0);
  EXPECT_EQ(window.TryTake(clock.Now()), seconds(40));  // the first one leaves at 60 s
  clock.Advance(milliseconds(39'999));
  EXPECT_EQ(window.WaitFor(clock.Now()), milliseconds(1));
  clock.Advance(milliseconds(1));
  EXPECT_EQ(window.TryTake(clock.Now()), nanoseconds(0));
  EXPECT_EQ(window.WaitFor(clock.Now()), seconds(10));  // then the one taken at 10 s
}

// Verifies a window slides (no reset at a fixed boundary): a burst at the end of one second
// still counts at the start of the next.
TEST(SimSlidingWindowTest, NoFixedBoundary) {
  FakeClock clock;
  SlidingWindow window(2, seconds(1));
  clock.Advance(milliseconds(900));
  EXPECT_EQ(window.TryTake(clock.Now()), nanoseconds(0));
  EXPECT_EQ(window.TryTake(clock.Now()), nanoseconds(0));
  clock.Advance(milliseconds(200));
  EXPECT_EQ(window.TryTake(clock.Now()), milliseconds(800));
}

// Verifies a limit <= 0 never waits and WaitFor takes nothing.
TEST(SimSlidingWindowTest, UnlimitedAndPeek) {
  FakeClock clock;
  SlidingWindow unlimited(0, seconds(1));
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(unlimited.TryTake(clock.Now()), nanoseconds(0));
  }
  SlidingWindow one(1, seconds(1));
  EXPECT_EQ(one.WaitFor(clock.Now()), nanoseconds(0));
  EXPECT_EQ(one.WaitFor(clock.Now()), nanoseconds(0));
  one.Take(clock.Now());
  EXPECT_EQ(one.WaitFor(clock.Now()), seconds(1));
}

}  // namespace
}  // namespace egress::sim
