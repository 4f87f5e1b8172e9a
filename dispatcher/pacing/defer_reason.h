#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget.h"

namespace egress::pacing {

// Why a delivery is not leaving now. Rate-limit reasons (kBudget, kRetryAfter, kRemainingZero)
// never consume a retry attempt; kBackoff follows a failed attempt.
enum class DeferReason : uint8_t {
  kNone,
  kScheduled,            // "scheduled": its next-attempt time has not come
  kBudget,               // "budget:<name>": a GCRA meter on its path is empty
  kRetryAfter,           // "retry_after": a key of its path is parked by Retry-After
  kRemainingZero,        // "remaining_zero": parked by remaining == 0 until the reset
  kBackoff,              // "backoff": waiting after a transient failure
  kRetryBudget,          // "retry_budget": the global retry budget is spent
  kDestinationDisabled,  // "destination_disabled": see Deferral::detail for why
  kConcurrency,          // "concurrency": the destination's in-flight cap is reached
  kPlatformConcurrency,  // "platform_concurrency": the platform's in-flight cap is reached
  kOrdering,             // "ordering": an earlier delivery with its ordering key is unfinished
  kStoreUnavailable,     // "budget_store_unavailable": the budget store failed; retried later
  kConnections,          // "connections": every connection of its origin is busy
  kTenantConcurrency,    // "tenant_concurrency": the tenant's in-flight cap on the platform
  kPaused,               // "paused": an operator's pause holds it (Deferral::detail: which)
  kBulkShare,  // "bulk_share:<name>": a bulk head has taken its share of that scope (Priority)
};

// "scheduled", "retry_after", ...; kBudget alone gives "budget", kBulkShare "bulk_share" (see
// Deferral::ToString).
std::string_view DeferReasonString(DeferReason reason);

// A reason with its details, as shown to operators and persisted with a deferred delivery.
struct Deferral {
  DeferReason reason = DeferReason::kNone;
  // The budget that denied, for kBudget, kBulkShare, kRetryAfter and kRemainingZero.
  std::optional<BudgetName> budget;
  // Steady time of the next attempt; unset when it waits for an event (an outcome, Enable()).
  std::optional<SteadyTime> until;
  // Free text, e.g. the disable reason ("webhook 410").
  std::string detail;

  // "budget:slack_channel", "retry_after", "destination_disabled", ...
  std::string ToString() const;
};

}  // namespace egress::pacing
