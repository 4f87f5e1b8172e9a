#pragma once

// The steps of the QueueStore contract that do not depend on the engine, shared by the RocksDB
// store (rocks_queue_store*.cc) and the PostgreSQL one (pg_queue_store*.cc), so the two cannot
// drift apart where the contract is one: the delivery a NewDelivery becomes, which records a
// List filter matches and how a page of leases is cut, how a record found under a destination
// is checked, and which retention age and purge count belong to a finished state.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"
#include "storage/delivery.h"
#include "storage/destination_seal.h"
#include "storage/lease_table.h"
#include "storage/queue_store.h"

namespace egress::storage {

// `in` as stored at intake: queued, due at `now_ms`, with `id`.
Delivery NewQueuedDelivery(const NewDelivery& in, std::string id, int64_t now_ms);

// A page of List examines at most this many records, so a filter that matches little cannot
// stall a caller; the cursor then resumes where the scan stopped.
inline constexpr size_t kMaxListScan = 10'000;
// Whether `d` passes every filter of `f` that is set (the cursor aside).
bool MatchesListFilter(const ListFilter& f, const Delivery& d);
// The leased deliveries List shows for `filter` (a state filter of in_flight), a page as List
// cuts it: at most filter.limit, at most kMaxListScan looked at.
ListPage ListLeased(const LeaseTable& leases, const ListFilter& filter);

// Decodes the record stored under `id` and found under the destination `stored` (the parts of
// a destination key as stored: its destination sealed when it holds a secret), and opens its
// destination with `seal`: Corruption naming what is wrong when the bytes do not decode, hold
// another id or destination, or their destination does not open.
Result<Delivery> DecodeUnderDestination(std::string_view bytes, std::string_view id,
                                        const DestinationParts& stored,
                                        const DestinationSeal& seal);

// How long after a quota slice stopped counting its counter is deleted: a refund is written only
// to a slice still counting at the change's time, so the slack covers a change computed before
// the purge's clock passed the slice and written after it.
inline constexpr int64_t kQuotaPruneGraceMs = 3'600'000;
// The record classes of retention, in the order a purge serves them.
inline constexpr DeliveryState kRetainedClasses[] = {
    DeliveryState::kDelivered, DeliveryState::kCancelled, DeliveryState::kDead};
// The policy's age for a finished state (0: kept forever); 0 for any other state.
int64_t RetentionAgeOf(const RetentionPolicy& policy, DeliveryState state);
// The count of PurgeCounts a removed record of a finished state adds to.
uint64_t& PurgedCountOf(PurgeCounts& counts, DeliveryState state);

}  // namespace egress::storage
