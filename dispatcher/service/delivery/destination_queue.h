#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dispatcher/pacing/priority.h"
#include "storage/delivery.h"

namespace egress::service {

// A waiting delivery as the DeliveryLoop keeps it: what pacing needs. The whole record is read
// again when the delivery is leased.
struct PendingDelivery {
  std::string id;
  storage::DeliveryState state = storage::DeliveryState::kQueued;
  int64_t next_attempt_ms = 0;
  int64_t updated_ms = 0;
  uint32_t cost = 1;
  std::string ordering_key;
  std::string reason;
  pacing::Priority priority = pacing::Priority::kNormal;
};

PendingDelivery PendingOf(const storage::Delivery& d);

// One destination's waiting deliveries as far as the loop has read them from the store, in id
// (enqueue) order: the head, which the loop offers to the Scheduler, and a bounded read-ahead
// behind it, so dispatching the next delivery needs no store read.
//
// Coverage: every waiting delivery of the destination with an id up to cursor() is held here
// (or is in flight, or its outcome is being written and comes back through Add); after a read
// that found the end of the destination (`complete`), every later one comes through Notify.
// Anything else is read with the next fetch. Not thread-safe: the loop owns it.
class DestinationQueue {
 public:
  // How a delivery past the cursor that Notify tells of is taken.
  enum class Notified {
    // Held at once when the queue is complete: notifications come in the order the deliveries
    // were accepted (one node's intake).
    kHold,
    // Left for a read of the store after the cursor, which is the order: notifications come from
    // several nodes by different paths (a store several nodes serve), so a later delivery may be
    // told of before an earlier one that was accepted first elsewhere; a read finds both.
    kRead,
  };
  // `read_ahead`: how many deliveries one fetch asks for; the queue holds up to twice that.
  // `hold_cap`, when given: the most it may hold now, which the owner lowers as destinations
  // come (DeliveryLoop::Options::held_budget): reads ask for no more than there is room for,
  // and what goes past it is dropped from the tail and read again later (at least one is always
  // held). A lowered cap applies to a queue at its next Add or read.
  explicit DestinationQueue(size_t read_ahead = 32, Notified notified = Notified::kHold,
                            const size_t* hold_cap = nullptr);

  // A waiting delivery the loop learned of from a fetch or an outcome. Ignores an id already
  // held unless this copy is newer (updated_ms). True when the head changed.
  bool Add(PendingDelivery p);
  // A delivery that became waiting elsewhere (intake, replay): added when it is covered (see
  // above) or a fetch is on its way (which may have read the store before it was there), left
  // for a later fetch otherwise. With Notified::kRead one past the cursor is always left for a
  // fetch (the queue is no longer complete; one on its way is followed by another). True when
  // the head changed.
  bool Notify(PendingDelivery p);

  // The fetch to make, if any: read up to `limit` deliveries after `after`.
  struct FetchPlan {
    std::string after;
    size_t limit = 0;
  };
  // nullopt when the queue holds enough or a fetch is on its way; otherwise marks one on its way.
  // `in_flight`: the destination's deliveries in flight (a read from the start meets them).
  std::optional<FetchPlan> StartFetch(size_t in_flight);
  // The answer to the fetch StartFetch planned: the waiting deliveries read (the caller drops
  // those in flight), the count the store returned (`read`) and the last id it returned.
  // True when the head changed.
  bool Fetched(std::vector<PendingDelivery> waiting, size_t read, const std::string& last_id);
  // The fetch failed: the next StartFetch tries again.
  void FetchFailed() { fetching_ = false; }
  // Forgets what was read ahead (after the store disagreed with it); the next fetch reads the
  // destination from its start.
  void Reset();
  // Work may have arrived unannounced: the queue is no longer complete, so the next fetch reads
  // after the cursor (a fetch on its way is followed by another). Keeps what is held.
  void Invalidate();

  // The earliest delivery held, once nothing earlier can still be waiting unread: it is covered
  // (its id is at most the cursor) or the queue is complete. A delivery notified while a read
  // was on its way, or held again after a Reset, is not the head before a read has shown that
  // nothing earlier waits (it would be sent ahead of what that read brings). nullptr otherwise.
  const PendingDelivery* head() const { return HeadCovered() ? &held_[first_] : nullptr; }
  // Removes the head (it was dispatched); the next in line becomes the head.
  std::optional<PendingDelivery> TakeHead();

  size_t size() const { return held_.size() - first_; }
  // When the oldest deferred delivery held was deferred (Unix ms; 0: none held). O(size()).
  int64_t oldest_deferral_ms() const;
  // What is held, head first.
  std::span<const PendingDelivery> held() const {
    return std::span<const PendingDelivery>(held_).subspan(first_);
  }
  // The slots allocated, taken ones included (what a queue costs beside what it holds).
  size_t capacity() const { return held_.capacity(); }
  const std::string& cursor() const { return cursor_; }
  bool complete() const { return complete_; }
  bool fetching() const { return fetching_; }

 private:
  void Trim();
  // Drops what is held from position `keep` on: the cursor comes back to the last one kept when
  // it was past it (never forward) and the queue is no longer complete (the store is read again
  // after the cursor).
  void DropTail(size_t keep);
  // What one read asks for, and the most held before the tail is dropped.
  size_t ReadSize() const;
  size_t HoldLimit() const;
  // Drops the slots TakeHead left before first_ once they are half of held_ (each delivery is
  // moved down at most once per halving), or all of them with `all`.
  void Compact(bool all);
  // Room for `more` deliveries, growing by doubling but never past what the hold limit lets the
  // queue hold with them (the tail beyond it is dropped at once by Trim).
  void Reserve(size_t more);
  bool HeadCovered() const { return size() != 0 && (complete_ || held_[first_].id <= cursor_); }

  // Members ordered so that the small ones share one word: a queue per destination with work.
  const size_t read_ahead_;
  const size_t* hold_cap_;
  const Notified notified_;
  bool notified_while_fetching_ = false;  // kRead: the fetch on its way may have missed one
  bool complete_ = false;
  bool fetching_ = false;
  // id order from first_, which is the head; the slots before it were taken. A vector, not a
  // deque: libstdc++'s deque allocates about 470 bytes when made and another node when a fetch
  // inserts, 850 bytes for a destination holding one delivery (bench/README.md, section 14).
  std::vector<PendingDelivery> held_;
  size_t first_ = 0;
  std::string cursor_;
  size_t asked_ = 0;          // the limit of the fetch on its way
  uint64_t epoch_ = 0;        // bumped whenever the cursor moves back
  uint64_t fetch_epoch_ = 0;  // epoch_ when the fetch on its way started
};

}  // namespace egress::service
