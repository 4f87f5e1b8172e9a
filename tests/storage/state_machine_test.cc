#include "storage/state_machine.h"

#include <set>
#include <utility>

#include <gtest/gtest.h>

namespace egress::storage {
namespace {

using S = DeliveryState;

const std::set<std::pair<S, S>>& Allowed() {
  static const auto* kAllowed = new std::set<std::pair<S, S>>{
      {S::kQueued, S::kInFlight},    {S::kQueued, S::kDeferred},    {S::kQueued, S::kDead},
      {S::kQueued, S::kCancelled},   {S::kInFlight, S::kDelivered}, {S::kInFlight, S::kDeferred},
      {S::kInFlight, S::kDead},      {S::kInFlight, S::kQueued},    {S::kDeferred, S::kInFlight},
      {S::kDeferred, S::kQueued},    {S::kDeferred, S::kDeferred},  {S::kDeferred, S::kDead},
      {S::kDeferred, S::kCancelled}, {S::kDead, S::kQueued},
  };
  return *kAllowed;
}

// Verifies the whole transition table: allowed pairs pass, every other pair is refused with a
// typed FailedPrecondition naming both states.
TEST(StateMachineTest, EveryPairMatchesTheTable) {
  for (S from : kAllStates) {
    for (S to : kAllStates) {
      Status s = CheckTransition(from, to);
      if (Allowed().count({from, to}) > 0) {
        EXPECT_TRUE(s.ok()) << StateName(from) << " -> " << StateName(to);
      } else {
        EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition)
            << StateName(from) << " -> " << StateName(to);
        EXPECT_NE(s.message().find(StateName(from)), std::string::npos);
      }
    }
  }
}

// Verifies that a failed transition leaves the delivery untouched.
TEST(StateMachineTest, RefusalChangesNothing) {
  Delivery d;
  d.id = "x";
  d.state = S::kDelivered;
  d.finished_ms = 5;
  const Delivery before = d;
  StateChange c{.to = S::kQueued, .at_ms = 10};
  EXPECT_FALSE(ApplyChange(c, 20, d).ok());
  EXPECT_EQ(d, before);
}

// Verifies that deferring needs a reason and that rate-limit waits keep the attempt count.
TEST(StateMachineTest, DeferNeedsReasonAndRateLimitsKeepAttempts) {
  Delivery d;
  d.id = "x";
  d.state = S::kInFlight;
  StateChange c{.to = S::kDeferred, .at_ms = 100, .next_attempt_ms = 5'100};
  EXPECT_EQ(ApplyChange(c, 20, d).code(), Status::Code::kInvalidArgument);
  c.reason = "retry_after";
  c.attempt = Attempt{.at_ms = 100, .http_status = 429};
  c.consume_attempt = false;
  ASSERT_TRUE(ApplyChange(c, 20, d).ok());
  EXPECT_EQ(d.attempts, 0u);
  EXPECT_EQ(d.next_attempt_ms, 5'100);
  EXPECT_EQ(d.reason, "retry_after");
  EXPECT_EQ(d.history.size(), 1u);
}

// Verifies that history keeps only the newest entries and that expect guards the change.
TEST(StateMachineTest, HistoryIsBoundedAndExpectGuards) {
  Delivery d;
  d.id = "x";
  d.state = S::kInFlight;
  for (int i = 0; i < 5; ++i) {
    StateChange fail{.to = S::kDeferred,
                     .at_ms = i,
                     .reason = "backoff",
                     .attempt = Attempt{.at_ms = i, .http_status = 503},
                     .consume_attempt = true};
    ASSERT_TRUE(ApplyChange(fail, 3, d).ok());
    ASSERT_TRUE(ApplyChange({.to = S::kInFlight, .at_ms = i}, 3, d).ok());
  }
  EXPECT_EQ(d.attempts, 5u);
  ASSERT_EQ(d.history.size(), 3u);
  EXPECT_EQ(d.history.front().at_ms, 2);
  StateChange guarded{.to = S::kDelivered, .at_ms = 9, .expect = S::kDeferred};
  EXPECT_EQ(ApplyChange(guarded, 3, d).code(), Status::Code::kFailedPrecondition);
  guarded.expect = S::kInFlight;
  ASSERT_TRUE(ApplyChange(guarded, 3, d).ok());
  EXPECT_EQ(d.finished_ms, 9);
  EXPECT_EQ(d.next_attempt_ms, 0);
}

}  // namespace
}  // namespace egress::storage
