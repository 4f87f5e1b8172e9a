#include "storage/counter_moves.h"

#include <string>
#include <vector>

#include "storage/index_keys.h"

namespace egress::storage {
namespace {

// A delivery's quota charges count unless it is dead or cancelled (absent: nothing to count).
bool CountsForQuota(const Delivery* d) {
  return d != nullptr && d->state != DeliveryState::kDead && d->state != DeliveryState::kCancelled;
}

}  // namespace

// Adds the counter moves of one delivery going from `before` to `after` (null: absent) to
// `out`. `dest` is the delivery's DestinationKeyOf (the same for both versions, as is the
// tenant); a change within one state moves nothing.
void AddCounterMoves(const Delivery* before, const Delivery* after, std::string_view dest,
                     CounterDeltas& out) {
  if (before != nullptr && after != nullptr && before->state == after->state) {
    return;
  }
  std::string key;  // one buffer for the per-destination keys
  auto add = [&](DeliveryState state, int64_t sign) {
    out.Add(CountKey(state), sign);
    if (!IsTerminal(state)) {
      SetDestCountKey(key, dest, state);
      out.Add(key, sign);
    }
  };
  if (before != nullptr) {
    add(before->state, -1);
  }
  if (after != nullptr) {
    add(after->state, +1);
  }
  const bool was_backlog = before != nullptr && !IsTerminal(before->state);
  const bool is_backlog = after != nullptr && !IsTerminal(after->state);
  if (was_backlog != is_backlog) {
    out.Add(BacklogKey((after != nullptr ? after : before)->tenant), is_backlog ? 1 : -1);
  }
}

// Adds the quota slice moves of one delivery going from `before` to `after`: its charges leave
// their slices when it ends dead or cancelled, come back when it is replayed, and change when
// its outcome corrects them. Only slices still counting at the change's time are touched (one
// that stopped counting gave its units back already, and may be pruned). A removal (`after`
// null: a purge of a finished record) moves nothing: what it charged stays until its window
// passes.
void AddQuotaMoves(const Delivery* before, const Delivery* after, CounterDeltas& out) {
  if (after == nullptr) {
    return;
  }
  const bool was = CountsForQuota(before);
  const bool is = CountsForQuota(after);
  if ((!was && !is) || (was && is && before->charges == after->charges)) {
    return;
  }
  const int64_t now_ms = after->updated_ms;
  auto move = [&](const std::vector<QuotaCharge>& charges, int64_t sign) {
    for (const QuotaCharge& c : charges) {
      if (c.expires_ms > now_ms && c.units != 0) {
        out.Add(QuotaSliceKey(after->tenant, c.quota, c.expires_ms), sign * c.units);
      }
    }
  };
  if (was) {
    move(before->charges, -1);
  }
  if (is) {
    move(after->charges, +1);
  }
}

}  // namespace egress::storage
