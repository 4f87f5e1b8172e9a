#pragma once

#include <cstdint>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/budget_store.h"

namespace egress::pacing {

// What one node's responses taught it about a scope key, for the other nodes that share its
// budgets (docs/pacing.md, "Shared learning"). The meters and parks are shared by the
// BudgetStore; these are the parameters the Scheduler paces each key to.
struct LearnedUpdate {
  enum class Kind : uint8_t {
    kBudget = 1,        // `key` paces to `budget` (learned from headers or adaptive)
    kForget = 2,        // `key` is back at its configured budget
    kDiscordBucket = 3  // the Discord route hash `key` belongs to the bucket hash `bucket`
  };
  Kind kind = Kind::kBudget;
  ScopeKey key = 0;
  Budget budget;
  // kBudget: the budget is an adaptive pace that header-less 429s lowered (AdaptivePace):
  // whether a step up is being tried, and for how long from the sender's now 429s are held off.
  bool adaptive = false;
  bool probing = false;
  Millis hold{0};
  ScopeKey bucket = 0;

  bool operator==(const LearnedUpdate&) const = default;
};

// How long what one node learned holds for the others: a node applies an update at most this
// long after it was written, and the share keeps updates no longer (docs/pacing.md).
inline constexpr Millis kLearnedTtl{10 * 60 * 1000};

// What a LearnedShare did so far.
struct LearnedShareCounts {
  uint64_t published = 0;
  uint64_t applied = 0;   // updates of other nodes handed to the Scheduler
  uint64_t dropped = 0;   // published ones lost (the share was down, or its batch full)
  uint64_t rejected = 0;  // entries or updates read that did not decode
};

// Carries LearnedUpdates to the other nodes (adapters::RedisLearnedBudgets,
// adapters::DynamoDbLearnedBudgets). Publish never blocks and may lose an update (the share is
// down): the other nodes then learn from their own responses, as without a share.
class LearnedShare {
 public:
  virtual ~LearnedShare() = default;
  virtual void Publish(const LearnedUpdate& update) = 0;
  virtual LearnedShareCounts counts() const = 0;
};

}  // namespace egress::pacing
