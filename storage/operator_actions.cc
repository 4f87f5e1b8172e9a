#include "storage/operator_actions.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace egress::storage {
namespace {

constexpr size_t kReplayPage = 1000;  // deliveries read per List call

}  // namespace

Status CheckReplayable(const std::string& id, DeliveryState state) {
  if (state == DeliveryState::kDead || state == DeliveryState::kDeferred) {
    return Status::Ok();
  }
  return Status::FailedPrecondition(
      fmt::format("delivery {} is {}; only dead and deferred deliveries can be replayed", id,
                  StateName(state)));
}

Status CheckCancellable(const std::string& id, DeliveryState state) {
  if (IsWaiting(state)) {
    return Status::Ok();
  }
  return Status::FailedPrecondition(
      fmt::format("delivery {} is {}; only queued and deferred deliveries can be cancelled", id,
                  StateName(state)));
}

Result<Delivery> ReplayOne(QueueStore& store, const std::string& id, int64_t now_ms) {
  auto d = store.Get(id);
  if (!d) {
    return d;
  }
  if (Status s = CheckReplayable(id, d->state); !s.ok()) {
    return s;
  }
  StateChange change{.to = DeliveryState::kQueued, .at_ms = now_ms};
  change.expect = d->state;  // a delivery that moved since the read is refused, not replayed
  change.reset_attempts = d->state == DeliveryState::kDead;
  return store.Apply(id, change);
}

Result<ReplayCount> ReplayMatching(QueueStore& store, const ListFilter& filter, bool dry_run,
                                   int64_t now_ms,
                                   const std::function<void(Delivery&&)>& on_replayed, size_t max) {
  if (filter.state != DeliveryState::kDead && filter.state != DeliveryState::kDeferred) {
    return Status::InvalidArgument("state: must be dead or deferred");
  }
  ListFilter page_filter = filter;
  ReplayCount count;
  count.cursor = filter.after_id;
  while (count.matched < max) {
    page_filter.limit = std::min(kReplayPage, max - count.matched);
    page_filter.after_id = count.cursor;
    auto page = store.List(page_filter);
    if (!page) {
      return page.error();
    }
    for (const Delivery& d : page->deliveries) {
      ++count.matched;
      count.cursor = d.id;
      if (dry_run) {
        continue;
      }
      // A delivery that changed state since the page was read, or whose write failed, is left
      // as it is: the others still get their replay.
      if (auto r = ReplayOne(store, d.id, now_ms); r) {
        ++count.replayed;
        if (on_replayed) {
          on_replayed(std::move(*r));
        }
      }
    }
    if (page->next_cursor.empty()) {
      count.done = true;
      break;
    }
    // Past what the page scanned, matched or not.
    count.cursor = std::max(count.cursor, page->next_cursor);
  }
  return count;
}

Result<Delivery> Cancel(QueueStore& store, const std::string& id, int64_t now_ms) {
  auto d = store.Get(id);
  if (!d) {
    return d;
  }
  if (Status s = CheckCancellable(id, d->state); !s.ok()) {
    return s;
  }
  StateChange change{.to = DeliveryState::kCancelled, .at_ms = now_ms};
  change.expect = d->state;
  return store.Apply(id, change);
}

}  // namespace egress::storage
