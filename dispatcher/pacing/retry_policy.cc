#include "dispatcher/pacing/retry_policy.h"

#include <algorithm>

namespace egress::pacing {
namespace {

std::string DeadReason(const DeliveryOutcome& outcome) {
  if (!outcome.platform_error.empty()) {
    return "permanent: " + outcome.platform_error;
  }
  return "permanent: http " + std::to_string(outcome.http_status);
}

}  // namespace

Millis BackoffDelay(const RetryPolicy& policy, int attempts_consumed, Random& random) {
  const int n = std::max(1, attempts_consumed);
  if (!policy.schedule.empty()) {
    const size_t index = std::min<size_t>(n - 1, policy.schedule.size() - 1);
    return policy.schedule[index];
  }
  int64_t ceiling = policy.base_backoff.count();
  for (int i = 1; i < n && ceiling < policy.max_backoff.count(); ++i) {
    ceiling *= 2;
  }
  ceiling = std::min(ceiling, policy.max_backoff.count());
  if (ceiling <= 0) {
    return Millis(0);
  }
  return Millis(static_cast<int64_t>(random.Next() % static_cast<uint64_t>(ceiling + 1)));
}

Verdict PlanRetry(const RetryPolicy& policy, const DeliveryOutcome& outcome,
                  const AttemptInfo& info, SteadyTime now, WallTime wall_now, Random& random) {
  Verdict verdict;
  verdict.outcome_class = Classify(outcome);
  switch (verdict.outcome_class) {
    case OutcomeClass::kDelivered:
      verdict.kind = VerdictKind::kDelivered;
      verdict.consumes_attempt = true;
      return verdict;
    case OutcomeClass::kDeadLetter:
      verdict.kind = VerdictKind::kDead;
      verdict.consumes_attempt = true;
      verdict.dead_reason = DeadReason(outcome);
      return verdict;
    case OutcomeClass::kBudgetExhausted:
      verdict.kind = VerdictKind::kDefer;
      verdict.next_attempt = now + outcome.retry_after.value_or(policy.throttle_wait);
      verdict.deferral.reason = DeferReason::kRetryAfter;
      verdict.deferral.until = verdict.next_attempt;
      return verdict;
    case OutcomeClass::kRetry:
      break;
  }
  verdict.consumes_attempt = true;
  const int consumed = info.attempts_consumed + 1;
  if (consumed >= policy.max_attempts) {
    verdict.kind = VerdictKind::kDead;
    verdict.dead_reason =
        outcome.exhausted_reason.empty() ? "max_attempts" : outcome.exhausted_reason;
    return verdict;
  }
  if (wall_now - info.created >= policy.max_age) {
    verdict.kind = VerdictKind::kDead;
    verdict.dead_reason = outcome.exhausted_reason.empty() ? "max_age" : outcome.exhausted_reason;
    return verdict;
  }
  Millis delay = BackoffDelay(policy, consumed, random);
  if (outcome.retry_after.has_value()) {
    delay = std::max(delay, *outcome.retry_after);
  }
  verdict.kind = VerdictKind::kDefer;
  verdict.next_attempt = now + delay;
  verdict.deferral.reason = DeferReason::kBackoff;
  verdict.deferral.until = verdict.next_attempt;
  return verdict;
}

}  // namespace egress::pacing
