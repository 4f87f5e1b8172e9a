#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dispatcher/pacing/budget.h"

namespace egress::pacing {

// What a profile platform's scope key is made of (docs/platforms.md, "Profile platforms").
enum class ScopeKeyPart : uint8_t {
  kTenant,       // the tenant's id
  kCredential,   // the credential's stable identity (DestinationSpec::credential)
  kDestination,  // the destination (a chat, a conversation)
};

// One scope of a profile platform's path: its budget, keyed by `key`, applied to the
// destinations whose text starts with `when_destination_starts_with` (empty: all of them).
struct ScopeRule {
  BudgetName budget = BudgetName::kTenantEgress;
  std::vector<ScopeKeyPart> key;
  std::string when_destination_starts_with;
  // A 429's Retry-After parks this scope (at most one rule says so; none: the destination's
  // own, last scope).
  bool park = false;
  // Counted as at most `limit` sends in any `scale_ms` (a sliding window, as Discord's global
  // limit is: SlidingWindow) rather than by the leaky bucket alone: for platforms that document
  // "N per window" ("8 per 2 s"), whose window a bucket of the same rate either overruns or
  // underuses. Only for limits up to SlidingWindow::kMaxLimit; a larger one is a bucket.
  bool window = false;
};

// The scopes of a profile platform, outermost first, after tenant_egress: a delivery passes
// every rule that applies to its destination. Empty for the built-in platforms, whose paths are
// compiled in (BuildScopePath). Several rules with one key and different budgets are several
// windows on that key (7 per second, 8 per 2 s, ... per conversation).
struct PlatformScopes {
  std::vector<ScopeRule> rules;
};

}  // namespace egress::pacing
