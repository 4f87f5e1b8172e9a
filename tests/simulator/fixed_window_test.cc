#include "tests/simulator/fixed_window.h"

#include <chrono>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace egress::sim {
namespace {

using std::chrono::milliseconds;

// Verifies the window counts down Remaining, refuses past the limit and reopens at its end.
TEST(FixedWindowTest, CountsDownAndReopens) {
  FakeClock clock;
  FixedWindow window(2, milliseconds(1000));
  FixedWindow::Outcome a = window.Take(clock.Now());
  EXPECT_TRUE(a.allowed);
  EXPECT_EQ(a.limit, 2);
  EXPECT_EQ(a.remaining, 1);
  EXPECT_EQ(a.reset_after, milliseconds(1000));
  clock.Advance(milliseconds(200));
  FixedWindow::Outcome b = window.Take(clock.Now());
  EXPECT_TRUE(b.allowed);
  EXPECT_EQ(b.remaining, 0);
  EXPECT_EQ(b.reset_after, milliseconds(800));
  FixedWindow::Outcome c = window.Take(clock.Now());
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.remaining, 0);
  clock.Advance(milliseconds(800));
  EXPECT_TRUE(window.Take(clock.Now()).allowed);
}

// Verifies Peek reports without counting.
TEST(FixedWindowTest, PeekDoesNotCount) {
  FakeClock clock;
  FixedWindow window(1, milliseconds(1000));
  EXPECT_TRUE(window.Peek(clock.Now()).allowed);
  EXPECT_TRUE(window.Peek(clock.Now()).allowed);
  EXPECT_TRUE(window.Take(clock.Now()).allowed);
  EXPECT_FALSE(window.Peek(clock.Now()).allowed);
}

}  // namespace
}  // namespace egress::sim
