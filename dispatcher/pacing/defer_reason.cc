#include "dispatcher/pacing/defer_reason.h"

namespace egress::pacing {

std::string_view DeferReasonString(DeferReason reason) {
  switch (reason) {
    case DeferReason::kNone:
      return "none";
    case DeferReason::kScheduled:
      return "scheduled";
    case DeferReason::kBudget:
      return "budget";
    case DeferReason::kRetryAfter:
      return "retry_after";
    case DeferReason::kRemainingZero:
      return "remaining_zero";
    case DeferReason::kBackoff:
      return "backoff";
    case DeferReason::kRetryBudget:
      return "retry_budget";
    case DeferReason::kDestinationDisabled:
      return "destination_disabled";
    case DeferReason::kConcurrency:
      return "concurrency";
    case DeferReason::kPlatformConcurrency:
      return "platform_concurrency";
    case DeferReason::kOrdering:
      return "ordering";
    case DeferReason::kStoreUnavailable:
      return "budget_store_unavailable";
    case DeferReason::kConnections:
      return "connections";
    case DeferReason::kTenantConcurrency:
      return "tenant_concurrency";
    case DeferReason::kPaused:
      return "paused";
    case DeferReason::kBulkShare:
      return "bulk_share";
  }
  return "unknown";
}

std::string Deferral::ToString() const {
  std::string text(DeferReasonString(reason));
  if ((reason == DeferReason::kBudget || reason == DeferReason::kBulkShare) && budget.has_value()) {
    text += ':';
    text += BudgetNameString(*budget);
  }
  return text;
}

}  // namespace egress::pacing
