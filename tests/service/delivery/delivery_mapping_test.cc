// WorkItemFor, StateChangeFor and PacingWaitChangeFor: what the delivery loop offers the
// Scheduler and writes to the store, as pure functions of what it holds and the time.

#include "dispatcher/service/delivery/delivery_mapping.h"

#include <gtest/gtest.h>

#include "storage/delivery_id.h"

namespace egress::service {
namespace {

using pacing::DeferReason;
using pacing::Verdict;
using pacing::VerdictKind;
using storage::DeliveryState;

constexpr int64_t kWallMs = 1'767'225'600'000;
const LoopTime kNow{SteadyTime(std::chrono::seconds(1000)), kWallMs};

PendingDelivery Head(DeliveryState state, int64_t next_attempt_ms, std::string reason = "") {
  storage::DeliveryIdGenerator ids(7, "");
  return {.id = ids.Next(kWallMs - 10'000),
          .state = state,
          .next_attempt_ms = next_attempt_ms,
          .updated_ms = kWallMs - 10'000,
          .cost = 3,
          .ordering_key = "thread-1",
          .reason = std::move(reason)};
}

// Verifies that a queued head carries its id, sequence, cost and ordering key and is due now.
TEST(WorkItemForTest, QueuedHeadIsDueNow) {
  const PendingDelivery head = Head(DeliveryState::kQueued, kWallMs - 10'000);
  const pacing::WorkItem item = WorkItemFor(head, kNow);
  EXPECT_EQ(item.id, head.id);
  EXPECT_EQ(item.sequence, storage::DeliveryIdSequence(head.id));
  EXPECT_NE(item.sequence, 0u);
  EXPECT_EQ(item.cost, 3);
  EXPECT_EQ(item.ordering_key, "thread-1");
  EXPECT_EQ(item.not_before, kNow.steady);
  EXPECT_EQ(item.wait_reason, DeferReason::kScheduled);
}

// Verifies that a backoff time binds: due at next_attempt_ms on the steady line, shown as backoff.
TEST(WorkItemForTest, BackoffDeferralBindsItsTime) {
  const PendingDelivery head = Head(DeliveryState::kDeferred, kWallMs + 7'000, "backoff");
  const pacing::WorkItem item = WorkItemFor(head, kNow);
  EXPECT_EQ(item.not_before, kNow.steady + Millis(7'000));
  EXPECT_EQ(item.wait_reason, DeferReason::kBackoff);
}

// Verifies that a Retry-After deferral binds its time and is shown as retry_after.
TEST(WorkItemForTest, RetryAfterDeferralBindsItsTime) {
  const PendingDelivery head = Head(DeliveryState::kDeferred, kWallMs + 30'000, "retry_after");
  const pacing::WorkItem item = WorkItemFor(head, kNow);
  EXPECT_EQ(item.not_before, kNow.steady + Millis(30'000));
  EXPECT_EQ(item.wait_reason, DeferReason::kRetryAfter);
}

// Verifies that a budget deferral is due at once: the meter decides again.
TEST(WorkItemForTest, BudgetDeferralIsDueAtOnce) {
  const PendingDelivery head =
      Head(DeliveryState::kDeferred, kWallMs + 60'000, "budget:webhook_destination");
  const pacing::WorkItem item = WorkItemFor(head, kNow);
  EXPECT_EQ(item.not_before, kNow.steady);
  EXPECT_EQ(item.wait_reason, DeferReason::kScheduled);
}

// Verifies that a next attempt already past is due now, not in the past.
TEST(WorkItemForTest, PastNextAttemptIsDueNow) {
  const PendingDelivery head = Head(DeliveryState::kDeferred, kWallMs - 5'000, "backoff");
  EXPECT_EQ(WorkItemFor(head, kNow).not_before, kNow.steady);
}

// Verifies that a delivered verdict becomes delivered, compare-and-set on in_flight, with the
// attempt for the history.
TEST(StateChangeForTest, DeliveredVerdict) {
  storage::Attempt attempt{.at_ms = kWallMs, .duration_ms = 12, .http_status = 200};
  const storage::StateChange change =
      StateChangeFor(Verdict{.kind = VerdictKind::kDelivered}, kNow, attempt);
  EXPECT_EQ(change.to, DeliveryState::kDelivered);
  EXPECT_EQ(change.at_ms, kWallMs);
  EXPECT_EQ(change.expect, DeliveryState::kInFlight);
  EXPECT_EQ(change.attempt, attempt);
  EXPECT_FALSE(change.consume_attempt);
  EXPECT_TRUE(change.reason.empty());
  EXPECT_FALSE(change.next_attempt_ms.has_value());
  EXPECT_EQ(OutcomeLabel(VerdictKind::kDelivered), "delivered");
}

// Verifies that a dead verdict keeps its reason, and that an empty one is written as "dead".
TEST(StateChangeForTest, DeadVerdictHasAReason) {
  Verdict dead{.kind = VerdictKind::kDead, .consumes_attempt = true, .dead_reason = "http_404"};
  storage::StateChange change = StateChangeFor(dead, kNow, std::nullopt);
  EXPECT_EQ(change.to, DeliveryState::kDead);
  EXPECT_EQ(change.reason, "http_404");
  EXPECT_TRUE(change.consume_attempt);
  EXPECT_FALSE(change.attempt.has_value());
  dead.dead_reason.clear();
  EXPECT_EQ(StateChangeFor(dead, kNow, std::nullopt).reason, "dead");
  EXPECT_EQ(OutcomeLabel(VerdictKind::kDead), "dead");
}

// Verifies that a deferral is written with its reason and the steady wait moved onto the wall
// clock.
TEST(StateChangeForTest, DeferVerdictCarriesReasonAndNextTime) {
  Verdict retry{.kind = VerdictKind::kDefer,
                .consumes_attempt = true,
                .next_attempt = kNow.steady + Millis(4'500)};
  retry.deferral.reason = DeferReason::kBackoff;
  const storage::StateChange change = StateChangeFor(retry, kNow, std::nullopt);
  EXPECT_EQ(change.to, DeliveryState::kDeferred);
  EXPECT_EQ(change.reason, "backoff");
  EXPECT_EQ(change.next_attempt_ms, kWallMs + 4'500);
  EXPECT_TRUE(change.consume_attempt);
  EXPECT_EQ(OutcomeLabel(VerdictKind::kDefer), "deferred");
}

// Verifies that a deferral whose time has passed is due now, not in the past.
TEST(StateChangeForTest, DeferVerdictInThePastIsDueNow) {
  Verdict wait{.kind = VerdictKind::kDefer, .next_attempt = kNow.steady - Millis(2'000)};
  wait.deferral.reason = DeferReason::kRetryAfter;
  const storage::StateChange change = StateChangeFor(wait, kNow, std::nullopt);
  EXPECT_EQ(change.reason, "retry_after");
  EXPECT_EQ(change.next_attempt_ms, kWallMs);
  EXPECT_FALSE(change.consume_attempt);
}

// Verifies that a long pacing wait is written as deferred with its reason and end, consuming no
// attempt, compare-and-set on the state the loop read.
TEST(PacingWaitChangeForTest, LongWaitIsWrittenThrough) {
  const PendingDelivery head = Head(DeliveryState::kQueued, kWallMs);
  auto change = PacingWaitChangeFor(head, kNow.steady + Millis(60'000),
                                    "budget:webhook_destination", kNow, Millis(5'000));
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->to, DeliveryState::kDeferred);
  EXPECT_EQ(change->at_ms, kWallMs);
  EXPECT_EQ(change->next_attempt_ms, kWallMs + 60'000);
  EXPECT_EQ(change->reason, "budget:webhook_destination");
  EXPECT_EQ(change->expect, DeliveryState::kQueued);
  EXPECT_FALSE(change->consume_attempt);
  EXPECT_FALSE(change->attempt.has_value());
}

// Verifies that waits shorter than persist_wait and waits without an end are not written.
TEST(PacingWaitChangeForTest, ShortOrOpenWaitsAreNotWritten) {
  const PendingDelivery head = Head(DeliveryState::kQueued, kWallMs);
  EXPECT_FALSE(
      PacingWaitChangeFor(head, kNow.steady + Millis(4'999), "retry_after", kNow, Millis(5'000)));
  EXPECT_TRUE(
      PacingWaitChangeFor(head, kNow.steady + Millis(5'000), "retry_after", kNow, Millis(5'000)));
  EXPECT_FALSE(PacingWaitChangeFor(head, std::nullopt, "retry_after", kNow, Millis(5'000)));
}

// Verifies that a wait the head already records (same reason, close end) is not written again,
// and that a different reason or a far later end is.
TEST(PacingWaitChangeForTest, WaitAlreadyRecordedIsNotWrittenAgain) {
  const PendingDelivery head = Head(DeliveryState::kDeferred, kWallMs + 60'000, "retry_after");
  EXPECT_FALSE(
      PacingWaitChangeFor(head, kNow.steady + Millis(62'000), "retry_after", kNow, Millis(5'000)));
  EXPECT_TRUE(PacingWaitChangeFor(head, kNow.steady + Millis(62'000), "budget:webhook_destination",
                                  kNow, Millis(5'000)));
  auto later =
      PacingWaitChangeFor(head, kNow.steady + Millis(70'000), "retry_after", kNow, Millis(5'000));
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->expect, DeliveryState::kDeferred);
}

// Verifies what a pause writes of a held head: deferred with reason paused, due at once, compare-
// and-set on its state; nothing when it records that already, or when it waits for a time of its
// own (a back-off or a Retry-After outlasts the pause); a budget wait is replaced.
TEST(PausedChangeForTest, RecordsThePauseButKeepsARetryTime) {
  auto change = PausedChangeFor(Head(DeliveryState::kQueued, kWallMs - 1'000), "paused", kNow);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->to, DeliveryState::kDeferred);
  EXPECT_EQ(change->reason, "paused");
  EXPECT_EQ(change->next_attempt_ms, kWallMs);
  EXPECT_EQ(change->expect, DeliveryState::kQueued);
  EXPECT_FALSE(change->consume_attempt);
  EXPECT_FALSE(PausedChangeFor(Head(DeliveryState::kDeferred, kWallMs, "paused"), "paused", kNow));
  EXPECT_FALSE(PausedChangeFor(Head(DeliveryState::kDeferred, kWallMs + 300'000, "backoff"),
                               "paused", kNow));
  EXPECT_FALSE(PausedChangeFor(Head(DeliveryState::kDeferred, kWallMs + 30'000, "retry_after"),
                               "paused", kNow));
  EXPECT_TRUE(
      PausedChangeFor(Head(DeliveryState::kDeferred, kWallMs - 1, "backoff"), "paused", kNow));
  auto budget = PausedChangeFor(
      Head(DeliveryState::kDeferred, kWallMs + 60'000, "budget:webhook_destination"), "paused",
      kNow);
  ASSERT_TRUE(budget.has_value());
  EXPECT_EQ(budget->expect, DeliveryState::kDeferred);
}

}  // namespace
}  // namespace egress::service
