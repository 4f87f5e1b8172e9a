#include "storage/state_machine.h"

#include <set>
#include <string>
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

// Verifies the history's bytes are bounded (issue 37: 20 attempts of 32 rate-limit headers each
// grew a 300-byte record to ~200 KiB, past a tenant's bound of stored bytes): the oldest entries
// go first, the newest always stays.
TEST(StateMachineTest, HistoryBytesAreBounded) {
  Delivery d;
  d.id = "x";
  d.state = S::kInFlight;
  Attempt big{.http_status = 500, .detail = std::string(300, 'd')};
  for (int h = 0; h < 32; ++h) {
    big.rate_limit_headers.emplace_back("x-ratelimit-" + std::to_string(h), std::string(256, 'v'));
  }
  for (int i = 0; i < 20; ++i) {
    big.at_ms = i;
    StateChange fail{.to = S::kDeferred, .at_ms = i, .reason = "backoff", .attempt = big};
    ASSERT_TRUE(ApplyChange(fail, 20, d).ok());
    ASSERT_TRUE(ApplyChange({.to = S::kInFlight, .at_ms = i}, 20, d).ok());
    size_t bytes = 0;
    for (const Attempt& a : d.history) {
      bytes += AttemptBytes(a);
    }
    EXPECT_TRUE(bytes <= kMaxHistoryBytes || d.history.size() == 1) << i << ": " << bytes;
    EXPECT_EQ(d.history.back().at_ms, i);
  }
  // Small attempts: the count bounds them, as before.
  Attempt small{.http_status = 503};
  for (int i = 0; i < 30; ++i) {
    small.at_ms = 100 + i;
    StateChange fail{.to = S::kDeferred, .at_ms = i, .reason = "backoff", .attempt = small};
    ASSERT_TRUE(ApplyChange(fail, 20, d).ok());
    ASSERT_TRUE(ApplyChange({.to = S::kInFlight, .at_ms = i}, 20, d).ok());
  }
  EXPECT_EQ(d.history.size(), 20u);
  EXPECT_EQ(d.history.front().at_ms, 110);
}

}  // namespace
}  // namespace egress::storage
