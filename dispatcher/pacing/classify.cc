#include "dispatcher/pacing/classify.h"

namespace egress::pacing {

OutcomeClass Classify(const DeliveryOutcome& outcome) {
  if (outcome.permanent) {
    return OutcomeClass::kDeadLetter;
  }
  if (outcome.accepted) {
    return OutcomeClass::kDelivered;
  }
  if (outcome.throttled) {
    return OutcomeClass::kBudgetExhausted;
  }
  if (outcome.transport != TransportResult::kResponse || outcome.transient) {
    return OutcomeClass::kRetry;
  }
  const int status = outcome.http_status;
  if (status >= 200 && status < 300) {
    return OutcomeClass::kDelivered;
  }
  if (status == 429) {
    return OutcomeClass::kBudgetExhausted;
  }
  if (status == 408 || status >= 500 || status <= 0) {
    return OutcomeClass::kRetry;
  }
  return OutcomeClass::kDeadLetter;
}

}  // namespace egress::pacing
