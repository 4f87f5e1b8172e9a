#include "tests/simulator/token_bucket.h"

#include <chrono>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace egress::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// Verifies a full bucket passes its burst at once, then asks for one interval.
TEST(TokenBucketTest, BurstThenWaitOneInterval) {
  FakeClock clock;
  TokenBucket bucket(1.0, 3.0, clock.Now());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(bucket.TryTake(clock.Now()), nanoseconds(0)) << i;
  }
  EXPECT_EQ(bucket.TryTake(clock.Now()), std::chrono::seconds(1));
  clock.Advance(milliseconds(400));
  EXPECT_EQ(bucket.WaitFor(clock.Now()), milliseconds(600));
  clock.Advance(milliseconds(600));
  EXPECT_EQ(bucket.TryTake(clock.Now()), nanoseconds(0));
}

// Verifies refill stops at the burst size however long the bucket idles.
TEST(TokenBucketTest, RefillCapsAtBurst) {
  FakeClock clock;
  TokenBucket bucket(10.0, 2.0, clock.Now());
  clock.Advance(std::chrono::hours(1));
  EXPECT_EQ(bucket.Remaining(clock.Now()), 2);
}

// Verifies a rate of zero means unlimited.
TEST(TokenBucketTest, ZeroRateIsUnlimited) {
  FakeClock clock;
  TokenBucket bucket(0.0, 1.0, clock.Now());
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(bucket.TryTake(clock.Now()), nanoseconds(0));
  }
}

// Verifies WaitFor takes nothing: asking twice gives the same answer.
TEST(TokenBucketTest, WaitForDoesNotTake) {
  FakeClock clock;
  TokenBucket bucket(1.0, 1.0, clock.Now());
  EXPECT_EQ(bucket.WaitFor(clock.Now()), nanoseconds(0));
  EXPECT_EQ(bucket.WaitFor(clock.Now()), nanoseconds(0));
  bucket.Take(clock.Now());
  EXPECT_GT(bucket.WaitFor(clock.Now()), nanoseconds(0));
}

}  // namespace
}  // namespace egress::sim
