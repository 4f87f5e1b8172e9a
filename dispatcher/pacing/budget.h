#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress::pacing {

// The named budgets of the product's budget table (issue 5). Each meters one scope of a
// delivery's path; see docs/pacing.md for which key each one uses. The eight below are compiled
// in; a profile platform's scopes (docs/platforms.md, "Profile platforms") name budgets of their
// own, registered by name when the profile is loaded (RegisterBudgetName), numbered from
// kBudgetNameCount up to kMaxBudgetNames.
enum class BudgetName : uint8_t {
  kTenantEgress,        // tenant, all platforms
  kWebhookDestination,  // tenant + destination URL
  kSlackWorkspace,      // Slack token (workspace)
  kSlackChannel,        // Slack token + channel
  kDiscordGlobal,       // Discord bot token
  kDiscordRoute,        // Discord bot token + bucket (or route) + major parameter
  kLineChannel,         // LINE channel token + endpoint
  kTenantIntake,        // tenant, intake API (metered by the service, not on any path)
};
inline constexpr int kBudgetNameCount = 8;
// The most budget names one process knows, compiled-in and registered together: the length of
// per-budget tables.
inline constexpr int kMaxBudgetNames = 64;

// The budget `name`, registered if it is new (the same name always gets the same number within
// a process). Safe from any thread; names are never forgotten. InvalidArgument for a name that
// is not [a-z][a-z0-9_]* of at most 48 bytes, FailedPrecondition past kMaxBudgetNames.
Result<BudgetName> RegisterBudgetName(std::string_view name);
// How many names are registered: every BudgetName's number is below it.
int BudgetNameCount();

// "tenant_egress", "webhook_destination", ... as used in config and in `budget:<name>` reasons;
// "unknown" for a number never registered.
std::string_view BudgetNameString(BudgetName name);
// The inverse of BudgetNameString; nullopt for a name never registered.
std::optional<BudgetName> ParseBudgetName(std::string_view text);

// `limit` units per `scale_ms`, with at most `burst` units at once (the meter's depth). A burst of
// 1 paces smoothly: no window of `scale_ms` ever holds more than `limit` units. A delivery whose
// cost exceeds `burst` passes only through an empty meter.
// The range of every field, checked wherever a budget comes in (config, the admin API, headers a
// platform sent): a billion units, a year, a billion at once are past any real platform's limit,
// and within them the meter's arithmetic stays far from int64 (it also saturates; see
// GcraEvaluate).
inline constexpr int64_t kMaxBudgetLimit = 1'000'000'000;
inline constexpr int64_t kMaxBudgetScaleMs = 366LL * 24 * 3600 * 1000;
inline constexpr int64_t kMaxBudgetBurst = 1'000'000'000;

struct Budget {
  int64_t limit = 1;
  int64_t scale_ms = 1000;
  int64_t burst = 1;

  // True when limit, scale_ms and burst are each in [1, its kMaxBudget*].
  bool Valid() const {
    return limit > 0 && limit <= kMaxBudgetLimit && scale_ms > 0 && scale_ms <= kMaxBudgetScaleMs &&
           burst > 0 && burst <= kMaxBudgetBurst;
  }
  friend bool operator==(const Budget&, const Budget&) = default;
};

// The deployment default for each budget (issue 5's table); 1 per second for a registered name
// (a profile sets its own in [budgets.<name>]).
Budget DefaultBudget(BudgetName name);

}  // namespace egress::pacing
