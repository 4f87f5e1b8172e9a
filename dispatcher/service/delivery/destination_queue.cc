#include "dispatcher/service/delivery/destination_queue.h"

#include <algorithm>

namespace egress::service {

PendingDelivery PendingOf(const storage::Delivery& d) {
  return {.id = d.id,
          .state = d.state,
          .next_attempt_ms = d.next_attempt_ms,
          .updated_ms = d.updated_ms,
          .cost = d.cost,
          .ordering_key = d.ordering_key,
          .reason = d.reason,
          .priority = d.priority};
}

DestinationQueue::DestinationQueue(size_t read_ahead, Notified notified, const size_t* hold_cap)
    : read_ahead_(std::max<size_t>(1, read_ahead)), hold_cap_(hold_cap), notified_(notified) {}

size_t DestinationQueue::HoldLimit() const {
  const size_t most = 2 * read_ahead_;
  return hold_cap_ == nullptr ? most : std::clamp<size_t>(*hold_cap_, 1, most);
}

size_t DestinationQueue::ReadSize() const { return std::min(read_ahead_, HoldLimit()); }

void DestinationQueue::Compact(bool all) {
  if (first_ == 0 || (!all && 2 * first_ < held_.size())) {
    return;
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(first_));
  first_ = 0;
}

void DestinationQueue::Reserve(size_t more) {
  const size_t need = held_.size() + more;
  if (need <= held_.capacity()) {
    return;
  }
  // A vector doubles: under a cap of 2, the third delivery told of (and dropped again by Trim)
  // left every destination 4 slots of PendingDelivery, 54 MB over 100,000 destinations
  // (bench/README.md, section 14).
  held_.reserve(std::max(need, std::min(2 * held_.capacity(), first_ + HoldLimit() + more)));
}

bool DestinationQueue::Add(PendingDelivery p) {
  Compact(false);
  auto it =
      std::lower_bound(held_.begin() + static_cast<std::ptrdiff_t>(first_), held_.end(), p.id,
                       [](const PendingDelivery& a, const std::string& id) { return a.id < id; });
  if (it != held_.end() && it->id == p.id) {
    // A copy from the same millisecond (intake's copy, then the pacing wait the loop wrote
    // within that ms) is taken too when it says something else: Add's copies are the store's
    // answers to writes, never older than what is held.
    if (p.updated_ms > it->updated_ms ||
        (p.updated_ms == it->updated_ms &&
         (p.state != it->state || p.next_attempt_ms != it->next_attempt_ms))) {
      *it = std::move(p);
    }
    return false;
  }
  const size_t limit = HoldLimit();
  if (it == held_.end() && size() >= limit && limit <= read_ahead_) {
    // Past the tail of a full queue (or one over a cap lowered since): Trim would drop it at
    // once, keeping the first `limit` (no more than a read). Not inserted, no slot is made for
    // it: under a cap of 2 that slot was a third of what a destination's queue allocated.
    DropTail(first_ + limit);
    return false;
  }
  const std::string head_before = head() == nullptr ? std::string() : head()->id;
  const auto at = it - held_.begin();  // Reserve may move what is held
  Reserve(1);
  held_.insert(held_.begin() + at, std::move(p));
  Trim();
  return head() != nullptr && head()->id != head_before;
}

bool DestinationQueue::Notify(PendingDelivery p) {
  if (notified_ == Notified::kRead && p.id > cursor_) {
    complete_ = false;  // the next read after the cursor finds it, and whatever came before it
    notified_while_fetching_ = notified_while_fetching_ || fetching_;
    return false;
  }
  if (!complete_ && p.id > cursor_) {
    if (!fetching_) {
      return false;  // the next fetch reads it
    }
    // The fetch on its way may have read the store before this one was there, and if it comes
    // back short it declares the queue complete: hold this one now (Fetched merges copies).
    return Add(std::move(p));
  }
  if (p.id > cursor_) {
    cursor_ = p.id;
  }
  return Add(std::move(p));
}

std::optional<DestinationQueue::FetchPlan> DestinationQueue::StartFetch(size_t in_flight) {
  // A head not covered yet is read for, however much is held behind it.
  const size_t read = ReadSize();
  if (fetching_ || complete_ || (size() > read / 2 && HeadCovered())) {
    return std::nullopt;
  }
  fetching_ = true;
  fetch_epoch_ = epoch_;
  // No more than there is room for under the limit (at least one): under a cap of 2, a read of
  // 2 while one is held would drop one at once and read it again.
  const size_t limit = HoldLimit();
  const size_t room = limit > size() ? limit - size() : 1;
  asked_ = std::min(read, room) + (cursor_.empty() ? in_flight : 0);
  return FetchPlan{cursor_, asked_};
}

bool DestinationQueue::Fetched(std::vector<PendingDelivery> waiting, size_t read,
                               const std::string& last_id) {
  fetching_ = false;
  const std::string head_before = head() == nullptr ? std::string() : head()->id;
  Compact(true);
  Reserve(waiting.size());
  held_.insert(held_.end(), std::make_move_iterator(waiting.begin()),
               std::make_move_iterator(waiting.end()));
  // Merge: both runs are in id order; keep the newest copy of an id held twice.
  std::inplace_merge(
      held_.begin(), held_.end() - static_cast<std::ptrdiff_t>(waiting.size()), held_.end(),
      [](const PendingDelivery& a, const PendingDelivery& b) { return a.id < b.id; });
  for (auto it = held_.begin(); it != held_.end();) {
    auto next = std::next(it);
    if (next != held_.end() && next->id == it->id) {
      if (it->updated_ms > next->updated_ms) {
        *next = std::move(*it);
      }
      it = held_.erase(it);
    } else {
      it = next;
    }
  }
  // The read covers (cursor, last_id], or everything after the cursor when it came back short;
  // unless the cursor moved back meanwhile (Trim, Reset): then only the next read tells.
  if (fetch_epoch_ == epoch_) {
    if (last_id > cursor_) {
      cursor_ = last_id;
    }
    complete_ = read < asked_ && !notified_while_fetching_;
  }
  notified_while_fetching_ = false;
  Trim();
  return head() != nullptr && head()->id != head_before;
}

void DestinationQueue::Invalidate() {
  complete_ = false;
  notified_while_fetching_ = notified_while_fetching_ || fetching_;
}

void DestinationQueue::Reset() {
  held_ = {};
  first_ = 0;
  cursor_.clear();
  complete_ = false;
  ++epoch_;
}

std::optional<PendingDelivery> DestinationQueue::TakeHead() {
  if (size() == 0) {
    return std::nullopt;
  }
  PendingDelivery p = std::move(held_[first_++]);
  if (first_ == held_.size()) {
    // Empty: an idle destination keeps one slot at most (a fetch of 32 would otherwise leave it
    // 4 KiB), so one delivery in and out at a time allocates nothing.
    if (held_.capacity() > 1) {
      held_ = {};
    } else {
      held_.clear();
    }
    first_ = 0;
  }
  return p;
}

void DestinationQueue::Trim() {
  const size_t limit = HoldLimit();
  if (size() <= limit) {
    return;
  }
  DropTail(first_ + std::min(read_ahead_, limit));
}

void DestinationQueue::DropTail(size_t keep) {
  held_.resize(keep);
  if (HoldLimit() <= 2 && held_.capacity() > held_.size()) {
    // A read or a delivery put back that went past a cap of 1 or 2 left a slot it no longer
    // holds: a PendingDelivery (136 bytes) on each of 100,000 destinations holding their head.
    // A larger hold keeps its room: it is read into again soon.
    Compact(true);
    held_.shrink_to_fit();
  }
  // Never forward: what is held past the cursor (told of while a read was on its way) is not
  // covered, and raising the cursor over it would skip what the store holds before it.
  cursor_ = std::min(cursor_, held_.back().id);
  complete_ = false;
  ++epoch_;
}

int64_t DestinationQueue::oldest_deferral_ms() const {
  int64_t oldest = 0;
  for (const PendingDelivery& p : held()) {
    if (p.state == storage::DeliveryState::kDeferred && (oldest == 0 || p.updated_ms < oldest)) {
      oldest = p.updated_ms;
    }
  }
  return oldest;
}

}  // namespace egress::service
