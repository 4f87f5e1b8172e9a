#include "dispatcher/pacing/sliding_window.h"

#include <gtest/gtest.h>

namespace egress::pacing {
namespace {

constexpr int64_t kMs = 1'000'000;

// Verifies that `limit` sends go at once, the next waits until the first is a window old, and
// that no interval of one window ever holds more than `limit` sends.
TEST(SlidingWindowTest, AllowsLimitPerAnyWindow) {
  SlidingWindow w(3, 1000 * kMs);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(w.NextAllowed(i * kMs), i * kMs);
    w.Record(i * kMs);
  }
  EXPECT_EQ(w.NextAllowed(5 * kMs), 1000 * kMs);
  w.Record(1000 * kMs);
  EXPECT_EQ(w.NextAllowed(1000 * kMs), 1001 * kMs);
  w.Record(1001 * kMs);
  w.Record(1002 * kMs);
  EXPECT_EQ(w.NextAllowed(1002 * kMs), 2000 * kMs);
  EXPECT_FALSE(w.Idle(2001 * kMs));
  EXPECT_TRUE(w.Idle(2002 * kMs));
}

// Verifies the bounds: a limit over kMaxLimit keeps at most kMaxLimit times; a bad window is 1 ns.
TEST(SlidingWindowTest, ClampsHostileParameters) {
  SlidingWindow big(1'000'000'000, 1000 * kMs);
  for (int64_t i = 0; i < SlidingWindow::kMaxLimit; ++i) {
    big.Record(i);
  }
  EXPECT_GT(big.NextAllowed(SlidingWindow::kMaxLimit), SlidingWindow::kMaxLimit);
  SlidingWindow zero(0, -5);
  EXPECT_EQ(zero.NextAllowed(10), 10);
  zero.Record(10);
  EXPECT_EQ(zero.NextAllowed(10), 11);
  EXPECT_TRUE(SlidingWindow(5, kMs).Idle(0));
}

}  // namespace
}  // namespace egress::pacing
