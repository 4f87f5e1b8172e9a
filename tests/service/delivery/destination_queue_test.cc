// DestinationQueue: the head and read-ahead of one destination, and what it must fetch.

#include "dispatcher/service/delivery/destination_queue.h"

#include <gtest/gtest.h>

namespace egress::service {
namespace {

PendingDelivery P(std::string id, int64_t updated_ms = 1) {
  PendingDelivery p;
  p.id = std::move(id);
  p.updated_ms = updated_ms;
  return p;
}

std::vector<std::string> Ids(const DestinationQueue& q) {
  std::vector<std::string> out;
  for (const auto& p : q.held()) {
    out.push_back(p.id);
  }
  return out;
}

TEST(DestinationQueueTest, FirstFetchReadsFromTheStartAndAShortReadCompletesIt) {
  DestinationQueue q(4);
  auto plan = q.StartFetch(2);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "");
  EXPECT_EQ(plan->limit, 6u);  // the read meets the two in flight first
  EXPECT_FALSE(q.StartFetch(0).has_value()) << "one fetch at a time";
  EXPECT_TRUE(q.Fetched({P("b"), P("c")}, 4, "d"));  // a and d are in flight
  EXPECT_EQ(q.head()->id, "b");
  EXPECT_TRUE(q.complete());
  EXPECT_EQ(q.cursor(), "d");
  EXPECT_FALSE(q.StartFetch(0).has_value()) << "complete: later work comes through Notify";
}

TEST(DestinationQueueTest, FullReadLeavesMoreToFetchOnceTheQueueRunsLow) {
  DestinationQueue q(4);
  q.StartFetch(0);
  q.Fetched({P("a"), P("b"), P("c"), P("d")}, 4, "d");
  EXPECT_FALSE(q.complete());
  EXPECT_FALSE(q.StartFetch(0).has_value()) << "holds enough";
  q.TakeHead();
  EXPECT_FALSE(q.StartFetch(0).has_value()) << "more than half is still enough";
  q.TakeHead();
  auto plan = q.StartFetch(3);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "d");
  EXPECT_EQ(plan->limit, 4u);
}

TEST(DestinationQueueTest, NotifyAddsOnlyWhatIsCovered) {
  DestinationQueue q(4);
  EXPECT_FALSE(q.Notify(P("x"))) << "not read yet: the fetch will find it";
  EXPECT_EQ(q.size(), 0u);
  q.StartFetch(0);
  q.Fetched({P("a")}, 1, "a");
  EXPECT_FALSE(q.Notify(P("b")));
  EXPECT_EQ(q.cursor(), "b");
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"a", "b"}));
}

TEST(DestinationQueueTest, AnEarlierDeliveryWaitingAgainBecomesTheHead) {
  DestinationQueue q(4);
  q.StartFetch(0);
  q.Fetched({P("c"), P("d")}, 2, "d");
  EXPECT_TRUE(q.Add(P("a")));   // deferred after its attempt
  EXPECT_FALSE(q.Add(P("b")));  // another one, behind the new head
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_FALSE(q.Add(P("c", 0))) << "an older copy of a held id is ignored";
  PendingDelivery newer = P("c", 5);
  newer.state = storage::DeliveryState::kDeferred;
  q.Add(newer);
  EXPECT_EQ(q.held()[2].state, storage::DeliveryState::kDeferred);
  // The answer to a write in the same millisecond as the copy held (a pacing wait written right
  // after intake) still replaces it: ServiceTest.BudgetWaitIsDeferredWithReasonAndNextEligibleTime
  // once found no oldest_deferral_ms.
  PendingDelivery same_ms = P("d", 1);
  same_ms.state = storage::DeliveryState::kDeferred;
  q.Add(same_ms);
  EXPECT_EQ(q.held()[3].state, storage::DeliveryState::kDeferred);
  EXPECT_GT(q.oldest_deferral_ms(), 0);
}

TEST(DestinationQueueTest, OverflowDropsTheTailAndReadsItAgainLater) {
  DestinationQueue q(2);
  q.StartFetch(0);
  q.Fetched({}, 0, "");
  ASSERT_TRUE(q.complete());
  for (const char* id : {"a", "b", "c", "d", "e"}) {
    q.Notify(P(id));
  }
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(q.cursor(), "b");
  EXPECT_FALSE(q.complete());
  EXPECT_FALSE(q.Notify(P("f"))) << "beyond the cursor again";
  q.TakeHead();
  q.TakeHead();
  auto plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "b");
}

TEST(DestinationQueueTest, AFetchAnsweredAfterTheCursorMovedBackDoesNotSkipAnything) {
  DestinationQueue q(2);
  q.StartFetch(0);
  q.Fetched({P("a")}, 1, "a");
  q.TakeHead();
  q.Notify(P("b"));
  q.Reset();  // the store disagreed with what was read ahead
  auto plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "");
  q.Reset();  // again, while that read is on its way
  q.Fetched({P("b"), P("c")}, 2, "c");
  EXPECT_EQ(q.cursor(), "") << "the read started before the reset";
  EXPECT_FALSE(q.complete());
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"b", "c"}));
}

TEST(DestinationQueueTest, FetchedMergesWithWhatNotifyAddedMeanwhile) {
  DestinationQueue q(4);
  q.StartFetch(0);
  q.Fetched({P("a")}, 1, "a");
  q.TakeHead();
  q.Notify(P("c"));  // complete: added
  q.Reset();
  q.StartFetch(0);
  q.Notify(P("d"));  // not complete: left for the fetch
  q.Add(P("c", 3));  // its outcome: waiting again
  q.Fetched({P("b"), P("c", 2), P("d")}, 3, "d");
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(q.held()[1].updated_ms, 3);
  EXPECT_TRUE(q.complete());
}

// The race the e2e bench found: a delivery made durable (and notified) after the fetch on its
// way read the store must not be lost when that fetch comes back short ("complete").
TEST(DestinationQueueTest, NotifyDuringAFetchIsKeptWhenTheFetchComesBackShort) {
  DestinationQueue q(4);
  q.StartFetch(0);
  q.Fetched({P("a"), P("b"), P("c"), P("d")}, 4, "d");  // a full page: more may follow
  q.TakeHead();
  q.TakeHead();
  q.TakeHead();
  ASSERT_TRUE(q.StartFetch(0).has_value());  // reads after "d" ...
  q.Notify(P("f"));                          // ... "f" is enqueued after that read
  q.Fetched({P("e")}, 1, "e");               // short: complete from here on
  EXPECT_TRUE(q.complete());
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"d", "e", "f"}));
}

// The inversion the cluster bench found: a delivery notified while the first read of its
// destination was on its way became the head and was sent before the earlier one that read
// brought. It is held, but not the head, until a read shows nothing earlier waits.
TEST(DestinationQueueTest, ADeliveryNotifiedDuringAReadWaitsForWhatTheReadBrings) {
  DestinationQueue q(4);
  ASSERT_TRUE(q.StartFetch(0).has_value());  // reads from the start ...
  EXPECT_FALSE(q.Notify(P("b"))) << "held, but not the head: \"a\" may come with the read";
  EXPECT_EQ(q.head(), nullptr);
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(q.Fetched({P("a")}, 1, "a"));  // ... which brings "a": short, so complete
  EXPECT_EQ(q.head()->id, "a");
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"a", "b"}));

  // A full read that stops before the notified one: still not the head; the next read is
  // planned however much is held.
  DestinationQueue r(2);
  ASSERT_TRUE(r.StartFetch(0).has_value());
  r.Notify(P("z"));
  EXPECT_TRUE(r.Fetched({P("a"), P("b")}, 2, "b")) << "\"a\" is the head now";
  EXPECT_EQ(r.head()->id, "a");
  r.TakeHead();
  r.TakeHead();
  EXPECT_EQ(r.head(), nullptr) << "\"z\" is past the cursor of an incomplete read";
  auto plan = r.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "b");
  EXPECT_TRUE(r.Fetched({P("c")}, 1, "c"));
  EXPECT_EQ(r.head()->id, "c");

  // Held again after a Reset (an outcome waiting again): not the head before a read.
  DestinationQueue s(4);
  s.Reset();
  s.Add(P("m"));
  EXPECT_EQ(s.head(), nullptr);
  ASSERT_TRUE(s.StartFetch(0).has_value());
  EXPECT_TRUE(s.Fetched({P("k"), P("m")}, 2, "m"));
  EXPECT_EQ(s.head()->id, "k");
}

// The inversion the cluster bench found with three nodes: the owner heard of sequence 4 (accepted
// on itself) before sequence 3 (accepted first, on another node, told through LISTEN/NOTIFY), and
// sent 4 first. With Notified::kRead a notified delivery past the cursor is read from the store,
// which has both in order.
TEST(DestinationQueueTest, NotifiedForAReadLeavesTheOrderToTheStore) {
  DestinationQueue q(4, DestinationQueue::Notified::kRead);
  q.StartFetch(0);
  q.Fetched({P("a")}, 1, "a");
  ASSERT_TRUE(q.complete());
  q.TakeHead();
  EXPECT_FALSE(q.Notify(P("d"))) << "not held: read";
  EXPECT_EQ(q.head(), nullptr);
  EXPECT_FALSE(q.complete());
  auto plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "a");
  q.Notify(P("e"));  // during the read, which may have missed it: another read follows
  EXPECT_TRUE(q.Fetched({P("c"), P("d")}, 2, "d"));
  EXPECT_EQ(q.head()->id, "c") << "the earlier one told of later";
  EXPECT_FALSE(q.complete());
  plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "d");
  // One at or before the cursor (a replay of an old delivery) is held as before.
  EXPECT_TRUE(q.Notify(P("b"))) << "the new head";
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"b", "c", "d"}));
}

// Verifies that heads taken leave no gap in what is held (the slots before the head are dropped
// as adds and reads come): adds, reads and overflow after takes keep id order from the head, and
// a queue taken empty is empty.
TEST(DestinationQueueTest, TakenHeadsLeaveNoGap) {
  DestinationQueue q(4);
  ASSERT_TRUE(q.StartFetch(0).has_value());
  q.Fetched({P("a"), P("c"), P("e"), P("g")}, 4, "g");
  EXPECT_EQ(q.TakeHead()->id, "a");
  EXPECT_EQ(q.TakeHead()->id, "c");
  EXPECT_FALSE(q.Add(P("f")));
  EXPECT_TRUE(q.Add(P("d")));  // earlier than the head: it is the head now
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"d", "e", "f", "g"}));
  EXPECT_EQ(q.TakeHead()->id, "d");
  EXPECT_EQ(q.TakeHead()->id, "e");
  ASSERT_TRUE(q.StartFetch(0).has_value());  // two held: read ahead after g
  q.Fetched({P("h"), P("i")}, 2, "i");
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"f", "g", "h", "i"}));
  EXPECT_EQ(q.size(), 4u);
  for (const char* id : {"f", "g", "h", "i"}) {
    EXPECT_EQ(q.TakeHead()->id, id);
  }
  EXPECT_EQ(q.size(), 0u);
  EXPECT_FALSE(q.TakeHead().has_value());

  // Overflow after takes: the tail past twice the read-ahead goes, counted from the head.
  DestinationQueue r(2);
  ASSERT_TRUE(r.StartFetch(0).has_value());
  r.Fetched({P("a"), P("b")}, 2, "b");
  EXPECT_EQ(r.TakeHead()->id, "a");
  ASSERT_TRUE(r.StartFetch(0).has_value());
  r.Fetched({P("c"), P("d"), P("e"), P("f")}, 4, "f");  // five held: over 4, back to 2
  EXPECT_EQ(Ids(r), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(r.cursor(), "c");
}

// Verifies that dropping the tail never moves the cursor forward: deliveries told of while a
// read is on its way are held past the cursor without being covered (the store may hold
// earlier ones the read has not brought); cut back to the cap, the cursor stays where the
// reads reached, so the next read still brings the earlier ones, and they go first.
TEST(DestinationQueueTest, DroppingTheTailNeverSkipsWhatTheStoreHolds) {
  size_t cap = 2;
  DestinationQueue q(32, DestinationQueue::Notified::kHold, &cap);
  ASSERT_TRUE(q.StartFetch(0).has_value());
  q.Fetched({P("b")}, 1, "b");  // asked for 2, got 1: complete
  q.Invalidate();               // work may have come unannounced (c and d, say)
  ASSERT_TRUE(q.StartFetch(0).has_value());
  q.Notify(P("e"));
  q.Notify(P("f"));  // three held: cut back to two
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"b", "e"}));
  EXPECT_EQ(q.cursor(), "b");
  q.FetchFailed();
  EXPECT_EQ(q.TakeHead()->id, "b");
  EXPECT_EQ(q.head(), nullptr) << "e is past the cursor: c and d may come before it";
  auto plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "b");
  EXPECT_EQ(plan->limit, 1u);
  q.Fetched({P("c")}, 1, "c");
  EXPECT_EQ(q.head()->id, "c");
}

// Verifies the hold cap its owner sets (DeliveryLoop::Options::held_budget): reads ask for no
// more than the cap, what goes past it is dropped from the tail and read again after the cursor,
// deliveries told of past the cursor are left in the store, and a raised cap reads more again.
TEST(DestinationQueueTest, HoldsNoMoreThanTheCapItsOwnerSets) {
  size_t cap = 3;
  DestinationQueue q(32, DestinationQueue::Notified::kHold, &cap);
  auto plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->limit, 3u);
  q.Fetched({P("a"), P("b"), P("c")}, 3, "c");
  EXPECT_FALSE(q.complete());
  EXPECT_FALSE(q.Notify(P("d")));  // past the cursor of a queue not complete: read later
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"a", "b", "c"}));
  cap = 2;
  q.Add(P("c2"));  // past the tail of a queue over the lowered cap: the tail goes all the same
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(q.cursor(), "b");
  q.Add(P("b2"));  // past the tail of a full queue: not held, read again after the cursor
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(q.cursor(), "b");
  EXPECT_EQ(q.TakeHead()->id, "a");
  plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "b");
  EXPECT_EQ(plan->limit, 1u);  // room for one more under the cap
  cap = 1000;                  // at most twice the read-ahead, as without a cap
  q.Fetched({P("b2")}, 1, "b2");
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"b", "b2"}));
  plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());  // two held, fewer than half a read
  EXPECT_EQ(plan->after, "b2");
  EXPECT_EQ(plan->limit, 32u);
}

// Verifies that a queue under a cap of 1 or 2 allocates no slot past what the cap lets it hold
// (a vector's doubling gave each of 100,000 destinations 4 slots; then a slot for the one told
// of past a full tail, dropped at once, gave each 3), that such a one is read again after the
// cursor, and that a queue without a small cap still grows as a vector does.
TEST(DestinationQueueTest, AllocatesNoMoreSlotsThanItsCapLetsItHold) {
  for (size_t cap : {size_t{1}, size_t{2}}) {
    DestinationQueue q(32, DestinationQueue::Notified::kHold, &cap);
    ASSERT_TRUE(q.StartFetch(0).has_value());
    q.Fetched({}, 0, "");  // empty and complete: what intake tells of is held at once
    for (const char* id : {"a", "b", "c", "d", "e"}) {
      q.Notify(P(id));
    }
    EXPECT_EQ(q.size(), cap);
    EXPECT_EQ(q.capacity(), cap);
    EXPECT_EQ(q.cursor(), cap == 1 ? "a" : "b");
    EXPECT_FALSE(q.complete());
    q.Add(P("0"));  // before the head: held, the tail goes, and so does its slot
    EXPECT_EQ(q.head()->id, "0");
    EXPECT_EQ(q.size(), cap);
    EXPECT_EQ(q.capacity(), cap);
    EXPECT_EQ(q.cursor(), cap == 1 ? "0" : "a");
    EXPECT_EQ(q.TakeHead()->id, "0");
    auto plan = q.StartFetch(0);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->after, cap == 1 ? "0" : "a");
  }
  size_t cap = 1000;  // the limit is twice the read-ahead: 64
  DestinationQueue wide(32, DestinationQueue::Notified::kHold, &cap);
  ASSERT_TRUE(wide.StartFetch(0).has_value());
  wide.Fetched({}, 0, "");
  for (int i = 0; i < 40; ++i) {
    wide.Notify(P(std::to_string(100 + i)));
  }
  EXPECT_EQ(wide.size(), 40u);
  EXPECT_GE(wide.capacity(), 40u);
  EXPECT_LE(wide.capacity(), 65u);
}

// Verifies Invalidate: a complete queue reads after its cursor again (work may have arrived
// unannounced: a lost wake-up, a lapsed lease), keeping what it holds; during a read, another
// read follows it.
TEST(DestinationQueueTest, InvalidateReadsAfterTheCursorAgain) {
  DestinationQueue q(4, DestinationQueue::Notified::kRead);
  q.StartFetch(0);
  q.Fetched({P("a")}, 1, "a");
  ASSERT_TRUE(q.complete());
  EXPECT_FALSE(q.StartFetch(0).has_value());
  q.Invalidate();
  EXPECT_EQ(q.head()->id, "a");
  auto plan = q.StartFetch(0);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->after, "a");
  q.Invalidate();  // while that read is on its way
  q.Fetched({}, 0, "");
  EXPECT_FALSE(q.complete());
  EXPECT_TRUE(q.StartFetch(0).has_value());
}

}  // namespace
}  // namespace egress::service
