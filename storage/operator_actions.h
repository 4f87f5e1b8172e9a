#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "dispatcher/base/result.h"
#include "storage/delivery.h"
#include "storage/queue_store.h"

namespace egress::storage {

// What an operator may do to stored deliveries, one implementation for the service's API
// (POST /v1/deliveries/{id}/replay, POST /v1/deliveries/replay, DELETE /v1/deliveries/{id}) and
// the CLI's offline path (the store opened directly). Each function is a sequence of
// QueueStore calls: it blocks on disk I/O (the service runs it on its storage pool) and is as
// thread-safe as the store. Times are wall-clock Unix ms from the caller.
//
// Errors: NotFound for an unknown id; FailedPrecondition when the delivery is in a state the
// action does not apply to (the message names the id, its state and the states that qualify),
// or when it changed state between the read and the write, or the store is read-only;
// InvalidArgument for a replay filter on a state other than dead or deferred; otherwise the
// store's error.

// Most deliveries one ReplayMatching call looks at: a bound on the time and memory of one
// call. Anything past it is left for the next call, which continues at the returned cursor.
inline constexpr size_t kMaxReplayPerCall = 100'000;

// OK when a delivery in `state` may be replayed (dead or deferred); FailedPrecondition
// "delivery <id> is <state>; only dead and deferred deliveries can be replayed" otherwise.
Status CheckReplayable(const std::string& id, DeliveryState state);

// OK when a delivery in `state` may be cancelled (queued or deferred); FailedPrecondition
// "delivery <id> is <state>; only queued and deferred deliveries can be cancelled" otherwise.
Status CheckCancellable(const std::string& id, DeliveryState state);

// Dead -> queued with its attempt count reset; deferred -> queued, due at `now_ms`. Returns the
// delivery as stored after the change.
Result<Delivery> ReplayOne(QueueStore& store, const std::string& id, int64_t now_ms);

struct ReplayCount {
  size_t matched = 0;   // deliveries the filter matched and this call looked at (at most `max`)
  size_t replayed = 0;  // of those, replayed (0 in a dry run)
  // Where the next call continues: pass it as filter.after_id. It is past every delivery this
  // call looked at (the input after_id when it looked at none).
  std::string cursor;
  bool done = false;  // true when no match was left after `cursor` when the call ended
};

// Replays the deliveries `filter` matches with an id greater than filter.after_id, in id order,
// looking at no more than `max` of them; a caller works through any number in slices by calling
// again with after_id = the returned cursor until `done` (a job does, and the CLI's offline
// path). filter.state must be dead or deferred; filter.limit is ignored (pages of 1000 are read).
// A delivery that cannot be replayed when its turn comes (it changed state meanwhile, or its
// write failed) is counted as matched, not replayed, and the cursor moves past it: slices cover
// each match at most once and never loop on one. Deliveries that match again after their replay
// (they died again) sit behind the cursor and are left for a new run. With `dry_run` nothing is
// written: matched is what a replay would look at. `on_replayed`, when set, gets each delivery as
// stored after its replay (the service tells its delivery loop). Fails only when the filter is
// bad or a page cannot be read; replays done before that stay done.
Result<ReplayCount> ReplayMatching(QueueStore& store, const ListFilter& filter, bool dry_run,
                                   int64_t now_ms,
                                   const std::function<void(Delivery&&)>& on_replayed = nullptr,
                                   size_t max = kMaxReplayPerCall);

// Queued or deferred -> cancelled. Returns the delivery as stored after the change. A delivery
// in flight is refused (FailedPrecondition): its attempt is already under way.
Result<Delivery> Cancel(QueueStore& store, const std::string& id, int64_t now_ms);

}  // namespace egress::storage
