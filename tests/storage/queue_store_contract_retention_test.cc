// The QueueStore contract, retention (docs/storage.md, "Retention"): PurgeExpired removes
// finished records by the age of their state, releases idempotency keys, never touches live
// deliveries, works in bounded slices, and leaves nothing behind (checked at rest by the kind's
// StoreSite::Audit).

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

constexpr int64_t kHour = 3'600'000;
constexpr int64_t kDay = 24 * kHour;

class QueueStoreRetentionTest : public QueueStoreContractTest {
 protected:
  // Enqueues one delivery at `created_ms` and takes it to `state` at `finished_ms` through the
  // moves the service makes (a lease first for delivered).
  std::string Finished(DeliveryState state, int64_t created_ms, int64_t finished_ms,
                       std::string key = "") {
    const std::string id = Enqueue(Hook({.key = std::move(key)}), created_ms);
    if (state == DeliveryState::kDelivered) {
      EXPECT_TRUE(store_->Apply(id, {.to = DeliveryState::kInFlight, .at_ms = finished_ms}));
    }
    StateChange change{.to = state, .at_ms = finished_ms};
    if (state == DeliveryState::kDead) {
      change.reason = "http_404";
    }
    auto r = store_->Apply(id, change);
    EXPECT_TRUE(r) << r.error().ToString();
    return id;
  }

  PurgeCounts Purge(const RetentionPolicy& policy, int64_t now_ms, size_t max = 1000) {
    auto r = store_->PurgeExpired(policy, now_ms, max);
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? *r : PurgeCounts{};
  }

  // The id a repeated (tenant, key) answers with, and whether it made a new delivery.
  EnqueueResult Repeat(const std::string& key, int64_t at_ms) {
    auto r = store_->Enqueue(Hook({.key = key}), at_ms);
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? *r : EnqueueResult{};
  }

  // Counters against a scan, then (closing the store) everything else against the records.
  void ExpectConsistent() {
    ExpectCountsMatchScan();
    ExpectAuditClean();
  }
};

// Verifies that each state has its own age, counted from its finish: cancelled after 3 days,
// delivered after 7, dead after 30, none of them a millisecond early.
TEST_P(QueueStoreRetentionTest, EachStateHasItsOwnAge) {
  const RetentionPolicy policy{
      .delivered_ms = 7 * kDay, .cancelled_ms = 3 * kDay, .dead_ms = 30 * kDay};
  const std::string delivered = Finished(DeliveryState::kDelivered, kT0, kT0);
  const std::string cancelled = Finished(DeliveryState::kCancelled, kT0, kT0);
  const std::string dead = Finished(DeliveryState::kDead, kT0, kT0);

  PurgeCounts c = Purge(policy, kT0 + 3 * kDay);  // exactly the age: not older than it
  EXPECT_EQ(c.cancelled + c.delivered + c.dead, 0u);
  c = Purge(policy, kT0 + 3 * kDay + 1);
  EXPECT_EQ(c.cancelled, 1u);
  EXPECT_EQ(c.delivered + c.dead, 0u);
  EXPECT_FALSE(c.more);
  EXPECT_FALSE(Exists(cancelled));
  EXPECT_TRUE(Exists(delivered));

  c = Purge(policy, kT0 + 7 * kDay + 1);
  EXPECT_EQ(c.delivered, 1u);
  EXPECT_EQ(c.dead, 0u);
  EXPECT_TRUE(Exists(dead));

  c = Purge(policy, kT0 + 30 * kDay);
  EXPECT_EQ(c.dead, 0u);
  c = Purge(policy, kT0 + 30 * kDay + 1);
  EXPECT_EQ(c.dead, 1u);
  EXPECT_FALSE(Exists(dead));
  EXPECT_EQ(*store_->Counts(), StateCounts{});
  ExpectConsistent();
}

// Verifies that the age runs from the finish, not the creation: a delivery deferred for 10 days
// and then delivered stays 7 days after its delivery, and a dead one replayed and dead again
// counts from its second death.
TEST_P(QueueStoreRetentionTest, AgeRunsFromTheLatestFinish) {
  const RetentionPolicy policy;
  const std::string late = Finished(DeliveryState::kDelivered, kT0, kT0 + 10 * kDay);
  const std::string dead = Finished(DeliveryState::kDead, kT0, kT0);
  ASSERT_TRUE(store_->Apply(dead, {.to = DeliveryState::kQueued, .at_ms = kT0 + 20 * kDay}));
  ASSERT_TRUE(store_->Apply(
      dead, {.to = DeliveryState::kDead, .at_ms = kT0 + 20 * kDay, .reason = "http_410"}));

  EXPECT_EQ(Purge(policy, kT0 + 17 * kDay).delivered, 0u);
  EXPECT_EQ(Purge(policy, kT0 + 17 * kDay + 1).delivered, 1u);
  EXPECT_FALSE(Exists(late));
  EXPECT_EQ(Purge(policy, kT0 + 31 * kDay).dead, 0u);
  EXPECT_TRUE(Exists(dead));
  EXPECT_EQ(Purge(policy, kT0 + 50 * kDay + 1).dead, 1u);
  ExpectConsistent();
}

// Verifies that an age of 0 keeps its class forever while the other classes still go.
TEST_P(QueueStoreRetentionTest, ZeroKeepsAClassForever) {
  const RetentionPolicy policy{.delivered_ms = 0, .cancelled_ms = kDay, .dead_ms = 0};
  const std::string delivered = Finished(DeliveryState::kDelivered, kT0, kT0, "k1");
  const std::string dead = Finished(DeliveryState::kDead, kT0, kT0);
  const std::string cancelled = Finished(DeliveryState::kCancelled, kT0, kT0);
  PurgeCounts c = Purge(policy, kT0 + 3650 * kDay);
  EXPECT_EQ(c.cancelled, 1u);
  EXPECT_EQ(c.delivered + c.dead, 0u);
  EXPECT_EQ(c.idempotency_keys, 1u);  // the key still expires (after 24 hours)
  EXPECT_TRUE(Exists(delivered));
  EXPECT_TRUE(Exists(dead));
  EXPECT_FALSE(Exists(cancelled));
  // With idempotency 0 too, a key lives as long as its record.
  const std::string kept = Finished(DeliveryState::kDelivered, kT0, kT0, "k2");
  EXPECT_EQ(Purge({.delivered_ms = 0, .cancelled_ms = 0, .dead_ms = 0, .idempotency_ms = 0},
                  kT0 + 3650 * kDay)
                .idempotency_keys,
            0u);
  EXPECT_EQ(Repeat("k2", kT0 + 3650 * kDay).id, kept);
  ExpectConsistent();
}

// Verifies that live deliveries (queued, deferred, in flight) are never purged however old, and
// that their idempotency keys keep answering with their ids.
TEST_P(QueueStoreRetentionTest, LiveDeliveriesAndTheirKeysStay) {
  const RetentionPolicy tiny{
      .delivered_ms = 1, .cancelled_ms = 1, .dead_ms = 1, .idempotency_ms = 1};
  const std::string queued = Enqueue(Hook({.key = "q"}));
  const std::string deferred = Enqueue(Hook({.key = "d"}));
  const std::string leased = Enqueue(Hook({.key = "l"}));
  ASSERT_TRUE(store_->Apply(deferred, {.to = DeliveryState::kDeferred,
                                       .at_ms = kT0,
                                       .next_attempt_ms = kT0 + 400 * kDay,
                                       .reason = "destination_disabled"}));
  ASSERT_TRUE(store_->Apply(leased, {.to = DeliveryState::kInFlight, .at_ms = kT0}));
  const int64_t later = kT0 + 365 * kDay;
  PurgeCounts c = Purge(tiny, later);
  EXPECT_EQ(c.delivered + c.cancelled + c.dead + c.idempotency_keys, 0u);
  for (const std::string& id : {queued, deferred, leased}) {
    EXPECT_TRUE(Exists(id)) << id;
  }
  EXPECT_EQ(Repeat("q", later).id, queued);
  EXPECT_EQ(Repeat("d", later).id, deferred);
  EXPECT_EQ(Repeat("l", later).id, leased);
  EXPECT_FALSE(Repeat("l", later).created);
  // The leased one finishes now: its key and record start ageing only from here.
  ASSERT_TRUE(store_->Apply(leased, {.to = DeliveryState::kDelivered, .at_ms = later}));
  EXPECT_EQ(Purge(tiny, later).delivered, 0u);
  EXPECT_EQ(Purge(tiny, later + 2).delivered, 1u);
  ExpectConsistent();
}

// Verifies idempotency expiry: a repeated key within the window answers with the first id; once
// the window after the finish has passed the key is released (counted) and the same key makes a
// new delivery, while the old record stays for its own retention; purging the old record later
// leaves the new delivery's key alone.
TEST_P(QueueStoreRetentionTest, IdempotencyKeyExpiresAfterTheWindow) {
  const RetentionPolicy policy;  // idempotency 24 h, delivered 7 days
  const std::string first = Finished(DeliveryState::kDelivered, kT0, kT0 + kHour, "order-1");
  EXPECT_EQ(Purge(policy, kT0 + 25 * kHour).idempotency_keys, 0u);
  EnqueueResult again = Repeat("order-1", kT0 + 25 * kHour);
  EXPECT_EQ(again.id, first);
  EXPECT_FALSE(again.created);

  PurgeCounts c = Purge(policy, kT0 + 25 * kHour + 1);
  EXPECT_EQ(c.idempotency_keys, 1u);
  EXPECT_EQ(c.delivered, 0u);
  EXPECT_TRUE(Exists(first));
  EnqueueResult fresh = Repeat("order-1", kT0 + 26 * kHour);
  EXPECT_TRUE(fresh.created);
  EXPECT_NE(fresh.id, first);
  EXPECT_EQ(store_->Get(first)->idempotency_key, "order-1");  // the record keeps what it had

  c = Purge(policy, kT0 + 8 * kDay);
  EXPECT_EQ(c.delivered, 1u);
  EXPECT_EQ(c.idempotency_keys, 0u);  // the old entry found the key naming the new delivery
  EXPECT_FALSE(Exists(first));
  EXPECT_EQ(Repeat("order-1", kT0 + 8 * kDay).id, fresh.id);
  ExpectConsistent();
}

// Verifies that a record purged before its key's window ends takes the key along (a key never
// names a missing record), and that this key is not counted as expired.
TEST_P(QueueStoreRetentionTest, PurgedRecordTakesItsKey) {
  const RetentionPolicy policy{.delivered_ms = kHour, .idempotency_ms = 24 * kHour};
  const std::string id = Finished(DeliveryState::kDelivered, kT0, kT0, "order-2");
  PurgeCounts c = Purge(policy, kT0 + kHour + 1);
  EXPECT_EQ(c.delivered, 1u);
  EXPECT_EQ(c.idempotency_keys, 0u);
  EnqueueResult fresh = Repeat("order-2", kT0 + 2 * kHour);
  EXPECT_TRUE(fresh.created);
  EXPECT_NE(fresh.id, id);
  ExpectConsistent();
}

// Verifies that an operator's Purge of one record releases its key only while the key names it.
TEST_P(QueueStoreRetentionTest, PurgeOfOneRecordKeepsANewerHoldersKey) {
  const std::string old = Finished(DeliveryState::kDead, kT0, kT0, "order-3");
  ASSERT_EQ(Purge(RetentionPolicy(), kT0 + 2 * kDay).idempotency_keys, 1u);
  const std::string fresh = Repeat("order-3", kT0 + 2 * kDay).id;
  ASSERT_TRUE(store_->Purge(old).ok());
  EXPECT_EQ(Repeat("order-3", kT0 + 2 * kDay).id, fresh);
  ExpectConsistent();
}

// Verifies that a call removes at most `max` entries and says when more is left, that the calls
// of a pass go on where the last stopped, and that a pass removes every expired one of every
// class with nothing left behind.
TEST_P(QueueStoreRetentionTest, SlicesAreBounded) {
  std::vector<std::string> ids;
  for (int i = 0; i < 23; ++i) {
    ids.push_back(Finished(DeliveryState::kDelivered, kT0, kT0 + i, "k" + std::to_string(i)));
  }
  for (int i = 0; i < 7; ++i) {
    ids.push_back(Finished(DeliveryState::kDead, kT0, kT0 + i));
  }
  const std::string recent = Finished(DeliveryState::kDelivered, kT0, kT0 + 20 * kDay);
  const RetentionPolicy policy{.dead_ms = 7 * kDay};
  const int64_t now = kT0 + 8 * kDay;
  std::vector<PurgeCounts> slices;
  for (int guard = 0; guard < 10; ++guard) {
    slices.push_back(Purge(policy, now, 10));
    if (!slices.back().more) {
      break;
    }
  }
  ASSERT_EQ(slices.size(), 3u);
  uint64_t delivered = 0, dead = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const PurgeCounts& c = slices[i];
    EXPECT_LE(c.delivered + c.dead + c.idempotency_keys, 10u) << "slice " << i;
    delivered += c.delivered;
    dead += c.dead;
    EXPECT_EQ(c.idempotency_keys, 0u);  // each key went with its record
  }
  EXPECT_EQ(slices[0].delivered, 10u);
  auto none = store_->PurgeExpired(policy, now, 0);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(slices[1].more);
  EXPECT_FALSE(slices[2].more);
  EXPECT_EQ(delivered, 23u);
  EXPECT_EQ(dead, 7u);
  for (const std::string& id : ids) {
    EXPECT_FALSE(Exists(id)) << id;
  }
  EXPECT_TRUE(Exists(recent));
  EXPECT_EQ(Purge(policy, now, 10).delivered, 0u);
  ExpectConsistent();
}

// Verifies that an entry which sorts before where earlier calls stopped (a delivery finished
// with an older time than ones already purged) is found once an hour of purge time has passed,
// and that a purge time going back starts from the front at once.
TEST_P(QueueStoreRetentionTest, EntryBehindTheCursorIsFoundWithinTheHour) {
  const RetentionPolicy policy;
  for (int i = 0; i < 5; ++i) {
    Finished(DeliveryState::kDelivered, kT0, kT0 + kDay + i);
  }
  const int64_t now = kT0 + 9 * kDay;
  EXPECT_TRUE(Purge(policy, now, 2).more);  // a pass stopped midway
  while (Purge(policy, now, 2).more) {
  }
  const std::string older = Finished(DeliveryState::kDelivered, kT0, kT0);
  uint64_t found = 0;
  for (int64_t t = now; t <= now + kHour; t += kHour / 4) {
    found += Purge(policy, t, 2).delivered;
  }
  EXPECT_EQ(found, 1u);
  EXPECT_FALSE(Exists(older));
  const std::string again = Finished(DeliveryState::kDelivered, kT0, kT0);
  EXPECT_EQ(Purge(policy, now, 2).delivered, 1u);  // back from now + 1 hour
  EXPECT_FALSE(Exists(again));
  ExpectConsistent();
}

// Verifies that purging in slices while other threads enqueue, lease and finish deliveries
// leaves the counters and every index consistent and loses no live delivery (run under
// ThreadSanitizer by ./dev test --tsan).
TEST_P(QueueStoreRetentionTest, PurgeRacesWithIntakeAndOutcomes) {
  const RetentionPolicy policy{
      .delivered_ms = 1, .cancelled_ms = 1, .dead_ms = 1, .idempotency_ms = 1};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> now{kT0};
  std::vector<std::string> live;
  std::thread writer([&] {
    for (int i = 0; i < 300; ++i) {
      const int64_t t = now.fetch_add(1);
      const std::string key = "w" + std::to_string(i % 40);  // keys repeat: some expire between
      auto r = store_->Enqueue(Hook({.key = key}), t);
      ASSERT_TRUE(r) << r.error().ToString();
      if (!r->created) {
        continue;
      }
      if (i % 5 == 0) {
        live.push_back(r->id);
        continue;
      }
      auto leased = store_->LeaseDue(t, 8);
      ASSERT_TRUE(leased) << leased.error().ToString();
      std::vector<QueueStore::IdChange> outcomes;
      for (const Delivery& d : *leased) {
        if (std::find(live.begin(), live.end(), d.id) != live.end()) {
          outcomes.push_back({d.id, {.to = DeliveryState::kQueued, .at_ms = t}});
        } else if (i % 3 == 0) {
          outcomes.push_back({d.id, {.to = DeliveryState::kDead, .at_ms = t, .reason = "x"}});
        } else {
          outcomes.push_back({d.id, {.to = DeliveryState::kDelivered, .at_ms = t}});
        }
      }
      auto applied = store_->ApplyBatch(outcomes);
      ASSERT_TRUE(applied) << applied.error().ToString();
    }
    stop = true;
  });
  uint64_t purged = 0;
  while (!stop) {
    auto c = store_->PurgeExpired(policy, now.load() + 10, 7);
    ASSERT_TRUE(c) << c.error().ToString();
    purged += c->delivered + c->dead;
  }
  writer.join();
  while (true) {
    auto c = store_->PurgeExpired(policy, now.load() + 10, 7);
    ASSERT_TRUE(c) << c.error().ToString();
    purged += c->delivered + c->dead;
    if (!c->more) {
      break;
    }
  }
  EXPECT_GT(purged, 0u);
  for (const std::string& id : live) {
    auto d = store_->Get(id);
    ASSERT_TRUE(d) << id << ": " << d.error().ToString();
    EXPECT_FALSE(IsTerminal(d->state));
  }
  auto counts = store_->Counts();
  ASSERT_TRUE(counts);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDelivered) + CountOf(*counts, DeliveryState::kDead),
            0u);
  ExpectConsistent();
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreRetentionTest,
                         ::testing::ValuesIn(ContractStoreKinds()), StoreKindName);

}  // namespace
}  // namespace egress::storage
