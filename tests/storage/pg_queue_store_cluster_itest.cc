// The PostgreSQL QueueStore as a shared store: what survives a reopen, two store objects (two
// "nodes") on one database, a killed server, and concurrent writers.

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "storage/index_keys.h"
#include "storage/pg_queue_store.h"
#include "tests/storage/pg_store_fixture.h"

namespace egress::storage {
namespace {

// Verifies that a reopen keeps records, counters, settings, stored bytes and idempotency keys,
// and that a lease (memory only) is gone: its delivery is waiting again.
TEST_F(PgStoreTest, PostgresReopenKeepsEverything) {
  const std::string a = MustEnqueue(PgSlack("C1", "ka"));
  const std::string b = MustEnqueue(PgSlack("C2"));
  MustApply(a, StateChange{.to = DeliveryState::kInFlight, .at_ms = kPgT0 + 1});
  ASSERT_TRUE(store_->PutSetting("overrides/acme", "{}").ok());
  const uint64_t bytes = *store_->TenantStoredBytes("acme");
  Reopen();
  EXPECT_EQ(store_->Get(a)->state, DeliveryState::kQueued);
  EXPECT_EQ(store_->Get(b)->destination, "C2");
  auto counts = store_->Counts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(CountOf(*counts, DeliveryState::kQueued), 2u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kInFlight), 0u);
  ExpectCountsMatchScan();
  EXPECT_EQ(*store_->TenantStoredBytes("acme"), bytes);
  EXPECT_EQ(store_->ListSettings("overrides/")->size(), 1u);
  auto again = store_->Enqueue(PgSlack("C1", "ka"), kPgT0 + 2);
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->id, a);
  // New ids still sort after the stored ones.
  EXPECT_GT(MustEnqueue(PgSlack("C1"), kPgT0 - 1'000), b);
}

// Verifies that two stores on one database see each other's enqueues, idempotency keys,
// counters and state changes.
TEST_F(PgStoreTest, PostgresTwoNodesShareOneStore) {
  auto other = OpenStore();
  ASSERT_TRUE(other.has_value()) << other.error().ToString();
  const std::string a = MustEnqueue(PgSlack("C1", "shared-key"));
  auto b = (*other)->Enqueue(PgSlack("C1", "shared-key"), kPgT0 + 1);
  ASSERT_TRUE(b.has_value()) << b.error().ToString();
  EXPECT_FALSE(b->created);
  EXPECT_EQ(b->id, a);
  auto c = (*other)->Enqueue(PgSlack("C1"), kPgT0 + 2);
  ASSERT_TRUE(c.has_value());
  auto pending = store_->PendingFor(DestinationKeyOf("slack", "acme", "bot", "C1"), "", 10);
  ASSERT_TRUE(pending.has_value());
  ASSERT_EQ(pending->deliveries.size(), 2u);
  EXPECT_EQ(pending->deliveries[1].id, c->id);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kQueued), 2u);
  EXPECT_EQ(*store_->TenantBacklog("acme"), 2u);
  ASSERT_TRUE((*other)
                  ->Apply(c->id, StateChange{.to = DeliveryState::kCancelled, .at_ms = kPgT0 + 3})
                  .has_value());
  EXPECT_EQ(store_->Get(c->id)->state, DeliveryState::kCancelled);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kCancelled), 1u);
  ASSERT_TRUE((*other)->PutSetting("overrides/x", "{}").ok());
  EXPECT_EQ(store_->ListSettings("overrides/")->size(), 1u);
}

// Verifies that a killed server makes calls fail with Unavailable and the store unhealthy, that
// Recover fails while the server is down and succeeds once it is back, and that nothing
// committed before the outage is lost.
TEST_F(PgStoreTest, PostgresKilledServerIsUnavailableUntilRecover) {
  PostgresServer own;  // its own server: this test kills it
  ASSERT_NE(own.port(), 0) << own.error();
  const std::string db = own.CreateDatabase();
  ASSERT_FALSE(db.empty()) << own.error();
  pg_.url = own.Url(db);
  Reopen();
  const std::string a = MustEnqueue(PgSlack("C1"));
  EXPECT_TRUE(store_->Health().healthy);
  own.Stop();
  auto failed = store_->Enqueue(PgSlack("C1"), kPgT0 + 1);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), Status::Code::kUnavailable) << failed.error().ToString();
  EXPECT_FALSE(store_->Health().healthy);
  EXPECT_EQ(store_->Health().reason, "connection_lost");
  auto read = store_->Get(a);
  ASSERT_FALSE(read.has_value());
  EXPECT_EQ(read.error().code(), Status::Code::kUnavailable);
  EXPECT_FALSE(store_->Recover().ok());
  ASSERT_TRUE(own.Start()) << own.error();
  Status recovered = store_->Recover();
  ASSERT_TRUE(recovered.ok()) << recovered.ToString();
  EXPECT_TRUE(store_->Health().healthy);
  EXPECT_EQ(store_->Get(a)->state, DeliveryState::kQueued);
  MustEnqueue(PgSlack("C1"), kPgT0 + 2);
  ExpectCountsMatchScan();
  // The URL's password never shows: not in errors, not in what the harness logs.
  EXPECT_EQ(RedactConninfo("postgresql://egress:hunter2@db:5432/x"),
            "postgresql://egress@db:5432/x");
  EXPECT_EQ(RedactConninfo("host=db password=hunter2 dbname=x"), "host=db password=* dbname=x");
}

// Verifies that EnqueueBatch from several threads (and two stores) while another thread leases
// and finishes deliveries keeps every counter exact: Counts equals a scan, backlog and stored
// bytes equal theirs.
TEST_F(PgStoreTest, PostgresConcurrentBatchesKeepCountersExact) {
  auto other = OpenStore();
  ASSERT_TRUE(other.has_value()) << other.error().ToString();
  constexpr int kThreads = 4;
  constexpr int kBatches = 10;
  constexpr int kPerBatch = 25;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    QueueStore* s = t % 2 == 0 ? store_.get() : other->get();
    threads.emplace_back([s, t, &failures] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<NewDelivery> batch;
        for (int i = 0; i < kPerBatch; ++i) {
          // Every thread writes the same destinations and repeats some keys of the others.
          batch.push_back(PgSlack("C" + std::to_string(i % 5),
                                  i % 3 == 0 ? "k" + std::to_string(b * 100 + i) : ""));
        }
        auto r = s->EnqueueBatch(batch, kPgT0 + t);
        if (!r.has_value()) {
          ++failures;
        }
      }
    });
  }
  threads.emplace_back([this, &failures] {
    for (int round = 0; round < 20; ++round) {
      auto leased = store_->LeaseDue(kPgT0 + 100, 10);
      if (!leased.has_value()) {
        ++failures;
        continue;
      }
      std::vector<QueueStore::IdChange> done;
      for (const Delivery& d : *leased) {
        done.push_back({d.id, StateChange{.to = DeliveryState::kDelivered, .at_ms = kPgT0 + 101}});
      }
      if (!store_->ApplyBatch(done).has_value()) {
        ++failures;
      }
    }
  });
  for (std::thread& t : threads) {
    t.join();
  }
  EXPECT_EQ(failures.load(), 0);
  ExpectCountsMatchScan();
  auto counts = store_->Counts();
  ASSERT_TRUE(counts.has_value());
  uint64_t total = 0;
  for (uint64_t n : *counts) {
    total += n;
  }
  // Keys k<b*100+i> (i % 3 == 0: 9 a batch) repeat across threads: stored once each.
  constexpr uint64_t kKeyed = kBatches * 9;
  constexpr uint64_t kUnkeyed = kThreads * kBatches * (kPerBatch - 9);
  EXPECT_EQ(total, kKeyed + kUnkeyed);
  EXPECT_EQ(*store_->TenantBacklog("acme"), CountOf(*counts, DeliveryState::kQueued));
  auto scan = store_->ScanStoredBytes();
  ASSERT_TRUE(scan.has_value());
  EXPECT_EQ(*store_->TenantStoredBytes("acme"), scan->at("acme"));
  EXPECT_EQ(*(*other)->TenantStoredBytes("acme"), scan->at("acme"));
}

// Verifies that a purge never waits for a writer's counter rows: while another transaction holds
// one destination's counter rows at 0 (a writer between its counter upserts), the purge returns,
// removes the other destination's rows at 0 and leaves the held ones to the next purge. (Its
// cleanup of rows at 0 ran inside the purge's transaction, waited here for the holder, and could
// deadlock with a writer taking its rows in key order.)
TEST_F(PgStoreTest, PostgresPurgeNeverWaitsForAWritersCounterRows) {
  const std::string a = MustEnqueue(PgSlack("C1"));
  const std::string b = MustEnqueue(PgSlack("C2"));
  MustApply(a, StateChange{.to = DeliveryState::kCancelled, .at_ms = kPgT0 + 1});
  MustApply(b, StateChange{.to = DeliveryState::kCancelled, .at_ms = kPgT0 + 1});
  const std::string held =
      DestCountKey(DestinationKeyOf("slack", "acme", "bot", "C1"), DeliveryState::kQueued);
  const std::string free =
      DestCountKey(DestinationKeyOf("slack", "acme", "bot", "C2"), DeliveryState::kQueued);
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  auto rows = [&](const std::string& key) {
    auto r = raw->Exec("SELECT count(*)::int8 FROM egress_counters WHERE key = $1 AND n = 0",
                       PgParams().Bytes(key));
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? r->Int(0, 0) : -1;
  };
  ASSERT_GT(rows(held), 0);
  ASSERT_GT(rows(free), 0);
  auto holder = Raw();
  ASSERT_NE(holder, nullptr);
  ASSERT_TRUE(holder->Run("BEGIN").ok());
  ASSERT_TRUE(
      holder
          ->Exec("SELECT 1 FROM egress_counters WHERE key = $1 FOR UPDATE", PgParams().Bytes(held))
          .has_value());
  const RetentionPolicy keep_all{0, 0, 0, 0};
  std::future<Result<PurgeCounts>> purge = std::async(
      std::launch::async, [&] { return store_->PurgeExpired(keep_all, kPgT0 + 2, 100); });
  const bool returned = purge.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  ASSERT_TRUE(holder->Run("COMMIT").ok());
  EXPECT_TRUE(returned) << "the purge waited for another transaction's counter rows";
  auto first = purge.get();
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_GT(rows(held), 0);
  EXPECT_EQ(rows(free), 0);
  auto second = store_->PurgeExpired(keep_all, kPgT0 + 3, 100);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_EQ(rows(held), 0);
  ExpectCountsMatchScan();
  auto counts = store_->DestinationCounts({DestinationKeyOf("slack", "acme", "bot", "C1")});
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ((*counts)[0], StateCounts{});
}

}  // namespace
}  // namespace egress::storage
