#include "dispatcher/pacing/retry_policy.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

DeliveryOutcome Http(int status) {
  DeliveryOutcome outcome;
  outcome.http_status = status;
  return outcome;
}

// Verifies the classification table for statuses and transport failures.
TEST(ClassifyTest, MapsStatusesAndFailures) {
  EXPECT_EQ(Classify(Http(200)), OutcomeClass::kDelivered);
  EXPECT_EQ(Classify(Http(204)), OutcomeClass::kDelivered);
  EXPECT_EQ(Classify(Http(429)), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(Classify(Http(408)), OutcomeClass::kRetry);
  EXPECT_EQ(Classify(Http(503)), OutcomeClass::kRetry);
  EXPECT_EQ(Classify(Http(404)), OutcomeClass::kDeadLetter);
  EXPECT_EQ(Classify(Http(302)), OutcomeClass::kDeadLetter);
  DeliveryOutcome timeout;
  timeout.transport = TransportResult::kTimeout;
  EXPECT_EQ(Classify(timeout), OutcomeClass::kRetry);
}

// Verifies that adapter flags win: throttle in a 200 body, permanent, accepted 409.
TEST(ClassifyTest, AdapterFlagsWin) {
  DeliveryOutcome throttled = Http(200);
  throttled.throttled = true;
  EXPECT_EQ(Classify(throttled), OutcomeClass::kBudgetExhausted);
  DeliveryOutcome permanent = Http(500);
  permanent.permanent = true;
  EXPECT_EQ(Classify(permanent), OutcomeClass::kDeadLetter);
  DeliveryOutcome accepted = Http(409);
  accepted.accepted = true;
  EXPECT_EQ(Classify(accepted), OutcomeClass::kDelivered);
}

// Verifies that a 429 defers for Retry-After without consuming an attempt.
TEST(RetryPolicyTest, RateLimitDoesNotConsumeAttempts) {
  FakeClock clock;
  FakeRandom random;
  RetryPolicy policy;
  policy.max_attempts = 1;
  DeliveryOutcome outcome = Http(429);
  outcome.retry_after = milliseconds(3000);
  Verdict v =
      PlanRetry(policy, outcome, {5, clock.WallNow()}, clock.Now(), clock.WallNow(), random);
  EXPECT_EQ(v.kind, VerdictKind::kDefer);
  EXPECT_FALSE(v.consumes_attempt);
  EXPECT_EQ(v.next_attempt, clock.Now() + milliseconds(3000));
  EXPECT_EQ(v.deferral.ToString(), "retry_after");
  EXPECT_EQ(random.draws(), 0u);
}

// Verifies full jitter: the delay is uniform in [0, min(cap, base * 2^(n-1))].
TEST(RetryPolicyTest, ExponentialBackoffWithFullJitter) {
  RetryPolicy policy;
  policy.base_backoff = milliseconds(100);
  policy.max_backoff = milliseconds(1000);
  FakeRandom max_draw(UINT64_MAX);
  FakeRandom zero_draw(0);
  FakeRandom mid_draw(250);
  EXPECT_EQ(BackoffDelay(policy, 1, zero_draw), milliseconds(0));
  EXPECT_EQ(BackoffDelay(policy, 3, mid_draw), milliseconds(250 % 401));
  EXPECT_EQ(BackoffDelay(policy, 3, max_draw).count(), static_cast<int64_t>(UINT64_MAX % 401));
  EXPECT_LE(BackoffDelay(policy, 30, max_draw), milliseconds(1000));
}

// Verifies that a schedule is followed and its last entry repeats.
TEST(RetryPolicyTest, FollowsScheduleAndRepeatsLast) {
  RetryPolicy policy;
  policy.schedule = {milliseconds(5000), milliseconds(300000)};
  FakeRandom random;
  EXPECT_EQ(BackoffDelay(policy, 1, random), milliseconds(5000));
  EXPECT_EQ(BackoffDelay(policy, 2, random), milliseconds(300000));
  EXPECT_EQ(BackoffDelay(policy, 7, random), milliseconds(300000));
}

// Verifies transient failures consume attempts and die at max_attempts and max_age.
TEST(RetryPolicyTest, DiesAtMaxAttemptsAndMaxAge) {
  FakeClock clock;
  FakeRandom random;
  RetryPolicy policy;
  policy.schedule = {milliseconds(1000)};
  policy.max_attempts = 3;
  policy.max_age = milliseconds(60000);
  Verdict retry =
      PlanRetry(policy, Http(503), {1, clock.WallNow()}, clock.Now(), clock.WallNow(), random);
  EXPECT_EQ(retry.kind, VerdictKind::kDefer);
  EXPECT_TRUE(retry.consumes_attempt);
  EXPECT_EQ(retry.deferral.ToString(), "backoff");
  Verdict exhausted =
      PlanRetry(policy, Http(503), {2, clock.WallNow()}, clock.Now(), clock.WallNow(), random);
  EXPECT_EQ(exhausted.kind, VerdictKind::kDead);
  EXPECT_EQ(exhausted.dead_reason, "max_attempts");
  WallTime created = clock.WallNow();
  clock.Advance(milliseconds(60000));
  Verdict old = PlanRetry(policy, Http(503), {0, created}, clock.Now(), clock.WallNow(), random);
  EXPECT_EQ(old.dead_reason, "max_age");
}

// Verifies that a transient failure with a name of its own (a TLS rejection) is retried on the
// schedule like any other and dies with its name, not max_attempts or max_age, at its end.
TEST(RetryPolicyTest, NamedTransientFailureDiesWithItsName) {
  FakeClock clock;
  FakeRandom random;
  RetryPolicy policy;
  policy.schedule = {milliseconds(1000)};
  policy.max_attempts = 3;
  policy.max_age = milliseconds(60000);
  DeliveryOutcome tls{.transport = TransportResult::kConnectError};
  tls.exhausted_reason = "tls_rejected";
  Verdict retry =
      PlanRetry(policy, tls, {1, clock.WallNow()}, clock.Now(), clock.WallNow(), random);
  EXPECT_EQ(retry.kind, VerdictKind::kDefer);
  EXPECT_EQ(retry.deferral.ToString(), "backoff");
  Verdict exhausted =
      PlanRetry(policy, tls, {2, clock.WallNow()}, clock.Now(), clock.WallNow(), random);
  EXPECT_EQ(exhausted.kind, VerdictKind::kDead);
  EXPECT_EQ(exhausted.dead_reason, "tls_rejected");
  WallTime created = clock.WallNow();
  clock.Advance(milliseconds(60000));
  EXPECT_EQ(PlanRetry(policy, tls, {0, created}, clock.Now(), clock.WallNow(), random).dead_reason,
            "tls_rejected");
}

// Verifies that permanent failures die with the platform's code.
TEST(RetryPolicyTest, PermanentFailureDiesWithCode) {
  FakeClock clock;
  FakeRandom random;
  DeliveryOutcome outcome = Http(404);
  outcome.platform_error = "10015";
  Verdict v = PlanRetry(RetryPolicy{}, outcome, {}, clock.Now(), clock.WallNow(), random);
  EXPECT_EQ(v.kind, VerdictKind::kDead);
  EXPECT_EQ(v.dead_reason, "permanent: 10015");
}

}  // namespace
}  // namespace egress::pacing
