#pragma once

#include <string_view>

#include "storage/counter_deltas.h"
#include "storage/delivery.h"

namespace egress::storage {

// What one delivery's change moves in the exact counters every store keeps (index_keys.h keys:
// per state, per tenant backlog, per destination and non-terminal state), shared by the RocksDB
// and PostgreSQL stores so that both count alike.

// Adds the counter moves of one delivery going from `before` to `after` (null: absent) to
// `out`. `dest` is the delivery's DestinationKeyOf as stored (the same for both versions, as is
// the tenant); a change within one state moves nothing. Stored bytes are the caller's.
void AddCounterMoves(const Delivery* before, const Delivery* after, std::string_view dest,
                     CounterDeltas& out);

// Adds the quota slice moves (QuotaSliceKey) of one delivery going from `before` to `after`: its
// charges leave their slices when it ends dead or cancelled, come back when it is replayed, and
// change when its outcome corrects them (docs/storage.md, "Quotas"). Only slices still counting
// at the change's time are touched. A removal (`after` null) moves nothing.
void AddQuotaMoves(const Delivery* before, const Delivery* after, CounterDeltas& out);

}  // namespace egress::storage
