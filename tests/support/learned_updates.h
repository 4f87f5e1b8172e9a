#pragma once

#include <cstdint>

#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/learned_share.h"

namespace egress {

// A learned budget of `limit` per second, burst 1, for scope key `key`: the update the shares'
// tests publish.
inline pacing::LearnedUpdate BudgetUpdate(uint64_t key, int64_t limit) {
  pacing::LearnedUpdate update;
  update.key = key;
  update.budget = pacing::Budget{limit, 1000, 1};
  return update;
}

}  // namespace egress
