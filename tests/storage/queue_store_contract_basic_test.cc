// The QueueStore contract, basics: enqueue and idempotency, a delivery's life through the
// indexes and counters, settings, per-destination work, listing, restarts and concurrent intake.

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

NewDelivery Slack(std::string channel, std::string idem = "") {
  NewDelivery d;
  d.tenant = "acme";
  d.platform = "slack";
  d.destination = std::move(channel);
  d.credential = "bot";
  d.payload = R"({"text":"hello"})";
  d.idempotency_key = std::move(idem);
  return d;
}

using QueueStoreTest = QueueStoreContractTest;

// Verifies that an enqueued delivery reads back whole and queued, due at enqueue time.
TEST_P(QueueStoreTest, EnqueueThenGet) {
  const std::string id = Enqueue(Slack("C1"));
  auto d = store_->Get(id);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->state, DeliveryState::kQueued);
  EXPECT_EQ(d->payload, R"({"text":"hello"})");
  EXPECT_EQ(d->next_attempt_ms, kT0);
  EXPECT_EQ(d->created_ms, kT0);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kQueued), 1u);
  EXPECT_EQ(store_->Get("01NOPE").error().code(), Status::Code::kNotFound);
}

// Verifies that a delivery's priority is kept (the scheduler orders heads by it after a
// restart as before), normal when intake gave none, and read back by PendingFor too.
TEST_P(QueueStoreTest, KeepsEachDeliverysPriority) {
  NewDelivery bulk = Slack("C1");
  bulk.priority = pacing::Priority::kBulk;
  NewDelivery high = Slack("C1");
  high.priority = pacing::Priority::kHigh;
  const std::string b = Enqueue(bulk);
  const std::string n = Enqueue(Slack("C1"));
  const std::string h = Enqueue(high);
  EXPECT_EQ(store_->Get(b)->priority, pacing::Priority::kBulk);
  EXPECT_EQ(store_->Get(n)->priority, pacing::Priority::kNormal);
  EXPECT_EQ(store_->Get(h)->priority, pacing::Priority::kHigh);
  auto pending = store_->PendingFor(DestinationKeyOf("slack", "acme", "bot", "C1"), "", 10);
  ASSERT_TRUE(pending.has_value());
  ASSERT_EQ(pending->deliveries.size(), 3u);
  EXPECT_EQ(pending->deliveries[0].priority, pacing::Priority::kBulk);
  EXPECT_EQ(pending->deliveries[1].priority, pacing::Priority::kNormal);
  EXPECT_EQ(pending->deliveries[2].priority, pacing::Priority::kHigh);
}

// Verifies that GetMany answers what exists in the order asked, leaves out what does not, and
// shows a leased delivery as leased (the lease is the store's, as Get shows it).
TEST_P(QueueStoreTest, GetManyAnswersWhatExistsInTheOrderAsked) {
  const std::string a = Enqueue(Slack("C1"));
  const std::string b = Enqueue(Slack("C2"));
  const std::string c = Enqueue(Slack("C3"));
  ASSERT_TRUE(store_->Apply(b, {.to = DeliveryState::kInFlight, .at_ms = kT0 + 1}).has_value());
  auto many = store_->GetMany({c, "01NOPE", b, a, c});
  ASSERT_TRUE(many.has_value()) << many.error().message();
  ASSERT_EQ(many->size(), 4u);
  EXPECT_EQ((*many)[0].id, c);
  EXPECT_EQ((*many)[1].id, b);
  EXPECT_EQ((*many)[1].state, DeliveryState::kInFlight);
  EXPECT_EQ((*many)[2].id, a);
  EXPECT_EQ((*many)[2].destination, "C1");
  EXPECT_EQ((*many)[3].id, c);
  auto none = store_->GetMany({});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

// Verifies that the same (tenant, key) returns the same id and other tenants do not collide.
TEST_P(QueueStoreTest, IdempotencyPerTenant) {
  const std::string first = Enqueue(Slack("C1", "order-1"));
  auto again = store_->Enqueue(Slack("C2", "order-1"), kT0 + 5);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->id, first);
  EXPECT_FALSE(again->created);
  NewDelivery other = Slack("C1", "order-1");
  other.tenant = "globex";
  auto theirs = store_->Enqueue(other, kT0);
  ASSERT_TRUE(theirs.has_value());
  EXPECT_NE(theirs->id, first);
  EXPECT_TRUE(theirs->created);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kQueued), 2u);
}

// Verifies that a batch is per-item: bad items get errors, good ones are stored, and a key
// repeated inside the batch maps to one delivery.
TEST_P(QueueStoreTest, BatchValidatesPerItem) {
  NewDelivery bad = Slack("C1");
  bad.tenant = "";
  NewDelivery huge = Slack("C1");
  huge.payload.assign(options_.max_payload_bytes + 1, 'x');
  auto results = store_->EnqueueBatch({Slack("C1", "k"), bad, Slack("C2", "k"), huge}, kT0);
  ASSERT_TRUE(results.has_value());
  ASSERT_EQ(results->size(), 4u);
  ASSERT_TRUE((*results)[0].has_value());
  EXPECT_EQ((*results)[1].error().code(), Status::Code::kInvalidArgument);
  EXPECT_NE((*results)[1].error().message().find("tenant"), std::string::npos);
  ASSERT_TRUE((*results)[2].has_value());
  EXPECT_EQ((*results)[2]->id, (*results)[0]->id);
  EXPECT_NE((*results)[3].error().message().find("payload"), std::string::npos);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kQueued), 1u);
  ExpectCountsMatchScan();
}

// Verifies a full life through the store: lease, defer, lease again, deliver; the indexes
// and counters follow every step and illegal steps are refused.
TEST_P(QueueStoreTest, LifecycleUpdatesIndexesAndCounts) {
  const std::string id = Enqueue(Slack("C1"));
  auto leased = store_->LeaseDue(kT0, 10);
  ASSERT_TRUE(leased.has_value());
  ASSERT_EQ(leased->size(), 1u);
  EXPECT_EQ((*leased)[0].state, DeliveryState::kInFlight);
  EXPECT_TRUE(store_->LeaseDue(kT0 + 1, 10)->empty());

  StateChange defer{.to = DeliveryState::kDeferred,
                    .at_ms = kT0 + 10,
                    .next_attempt_ms = kT0 + 30'000,
                    .reason = "retry_after",
                    .attempt = Attempt{.at_ms = kT0 + 10, .http_status = 429}};
  ASSERT_TRUE(store_->Apply(id, defer).has_value());
  EXPECT_TRUE(store_->LeaseDue(kT0 + 29'999, 10)->empty());
  ASSERT_EQ(store_->LeaseDue(kT0 + 30'000, 10)->size(), 1u);

  auto done = store_->Apply(id, {.to = DeliveryState::kDelivered, .at_ms = kT0 + 30'100});
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->finished_ms, kT0 + 30'100);
  EXPECT_EQ(done->attempts, 0u);  // the 429 wait did not count
  auto illegal = store_->Apply(id, {.to = DeliveryState::kQueued, .at_ms = kT0 + 40'000});
  EXPECT_EQ(illegal.error().code(), Status::Code::kFailedPrecondition);
  auto counts = *store_->Counts();
  EXPECT_EQ(CountOf(counts, DeliveryState::kDelivered), 1u);
  EXPECT_EQ(CountOf(counts, DeliveryState::kQueued) + CountOf(counts, DeliveryState::kInFlight) +
                CountOf(counts, DeliveryState::kDeferred),
            0u);
  EXPECT_TRUE(store_->ListDestinations("", 10)->empty());
  EXPECT_EQ(*store_->TenantBacklog("acme"), 0u);
  ExpectCountsMatchScan();
}

// Verifies that settings persist across reopen, list by prefix and delete with an empty value.
TEST_P(QueueStoreTest, SettingsPersistAcrossReopen) {
  ASSERT_TRUE(store_->PutSetting("overrides/acme", R"({"tenant_intake":1})").ok());
  ASSERT_TRUE(store_->PutSetting("overrides/globex", "{}").ok());
  ASSERT_TRUE(store_->PutSetting("credential/acme/bot", "x").ok());
  Reopen(kT0);
  auto overrides = store_->ListSettings("overrides/");
  ASSERT_TRUE(overrides.has_value());
  ASSERT_EQ(overrides->size(), 2u);
  EXPECT_EQ((*overrides)[0].first, "overrides/acme");
  EXPECT_EQ((*overrides)[0].second, R"({"tenant_intake":1})");
  ASSERT_TRUE(store_->PutSetting("overrides/acme", "").ok());
  EXPECT_EQ(store_->ListSettings("overrides/")->size(), 1u);
}

// Verifies that a tenant's backlog counts its non-terminal deliveries only.
TEST_P(QueueStoreTest, TenantBacklogCountsWaitingWork) {
  const std::string a = Enqueue(Slack("C1"));
  Enqueue(Slack("C1"));
  NewDelivery other = Slack("C1");
  other.tenant = "globex";
  Enqueue(other);
  EXPECT_EQ(*store_->TenantBacklog("acme"), 2u);
  ASSERT_EQ(store_->LeaseDue(kT0, 1)->size(), 1u);
  EXPECT_EQ(*store_->TenantBacklog("acme"), 2u);  // in flight still counts
  ASSERT_TRUE(store_->Apply(a, {.to = DeliveryState::kDelivered, .at_ms = kT0}));
  EXPECT_EQ(*store_->TenantBacklog("acme"), 1u);
  EXPECT_EQ(*store_->TenantBacklog("globex"), 1u);
  EXPECT_EQ(*store_->TenantBacklog("nobody"), 0u);
}

// Verifies that work is found per destination in enqueue order, and destinations are listed
// once each however many deliveries they hold.
TEST_P(QueueStoreTest, PendingPerDestinationInEnqueueOrder) {
  std::vector<std::string> c1;
  for (int i = 0; i < 5; ++i) {
    c1.push_back(Enqueue(Slack("C1"), kT0 + i));
    Enqueue(Slack("C2"), kT0 + i);
    Enqueue(Slack("C10"), kT0 + i);
  }
  auto dests = store_->ListDestinations("", 10);
  ASSERT_TRUE(dests.has_value());
  ASSERT_EQ(dests->size(), 3u);
  auto next = store_->ListDestinations((*dests)[0], 10);
  EXPECT_EQ(next->size(), 2u);
  const std::string key = DestinationKeyOf("slack", "acme", "bot", "C1");
  auto first = store_->PendingFor(key, "", 3);
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->deliveries.size(), 3u);
  EXPECT_EQ(first->deliveries[0].id, c1[0]);
  EXPECT_EQ(first->deliveries[2].id, c1[2]);
  auto rest = store_->PendingFor(key, first->deliveries.back().id, 10);
  ASSERT_EQ(rest->deliveries.size(), 2u);
  EXPECT_EQ(rest->deliveries[1].id, c1[4]);
}

// Verifies list filters and cursor pagination visit every match exactly once.
TEST_P(QueueStoreTest, ListFiltersAndPaginates) {
  std::vector<std::string> ids;
  for (int i = 0; i < 25; ++i) {
    ids.push_back(Enqueue(Slack(i % 2 == 0 ? "C1" : "C2"), kT0 + i));
  }
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(store_
                    ->Apply(ids[i], {.to = DeliveryState::kDead,
                                     .at_ms = kT0 + 100,
                                     .reason = "slack:channel_not_found"})
                    .has_value());
  }
  ListFilter f{.state = DeliveryState::kDead, .limit = 4};
  auto page1 = store_->List(f);
  ASSERT_TRUE(page1.has_value());
  ASSERT_EQ(page1->deliveries.size(), 4u);
  ASSERT_FALSE(page1->next_cursor.empty());
  f.after_id = page1->next_cursor;
  auto page2 = store_->List(f);
  ASSERT_EQ(page2->deliveries.size(), 2u);
  EXPECT_TRUE(page2->next_cursor.empty());
  EXPECT_EQ(page2->deliveries.back().id, ids[5]);

  ListFilter by_dest{.destination = "C2", .limit = 100};
  EXPECT_EQ(store_->List(by_dest)->deliveries.size(), 12u);
  ListFilter by_reason{.reason_prefix = "slack:", .limit = 100};
  EXPECT_EQ(store_->List(by_reason)->deliveries.size(), 6u);
  ListFilter none{.tenant = "nobody", .limit = 100};
  EXPECT_TRUE(store_->List(none)->deliveries.empty());
}

// Verifies that in_flight deliveries at a crash are due again after reopening (a lease is not
// durable: the store still has them queued, due when they were leased), and counts still match
// a full scan.
TEST_P(QueueStoreTest, RecoversInFlightOnOpen) {
  const std::string a = Enqueue(Slack("C1"));
  Enqueue(Slack("C1"));
  ASSERT_EQ(store_->LeaseDue(kT0, 1)->size(), 1u);
  Reopen(kT0 + 60'000);
  auto d = store_->Get(a);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->state, DeliveryState::kQueued);
  EXPECT_EQ(d->next_attempt_ms, kT0);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kInFlight), 0u);
  EXPECT_EQ(store_->LeaseDue(kT0 + 60'000, 10)->size(), 2u);
  ExpectCountsMatchScan();
}

// Verifies that replaying a dead delivery queues it due now with a fresh attempt count.
TEST_P(QueueStoreTest, ReplayDeadResetsAttempts) {
  const std::string id = Enqueue(Slack("C1"));
  ASSERT_EQ(store_->LeaseDue(kT0, 1)->size(), 1u);
  ASSERT_TRUE(store_->Apply(id, {.to = DeliveryState::kDead,
                                 .at_ms = kT0,
                                 .reason = "http_500",
                                 .attempt = Attempt{.at_ms = kT0, .http_status = 500},
                                 .consume_attempt = true}));
  auto replayed =
      store_->Apply(id, {.to = DeliveryState::kQueued, .at_ms = kT0 + 5, .reset_attempts = true});
  ASSERT_TRUE(replayed.has_value());
  EXPECT_EQ(replayed->attempts, 0u);
  EXPECT_TRUE(replayed->reason.empty());
  EXPECT_EQ(replayed->history.size(), 1u);
  EXPECT_EQ(store_->LeaseDue(kT0 + 5, 10)->size(), 1u);
}

// Verifies that concurrent idempotent enqueues of one key store exactly one delivery, and
// concurrent writers share fsyncs (group commit).
TEST_P(QueueStoreTest, ConcurrentEnqueuesAreExactAndShareSyncs) {
  std::vector<std::thread> threads;
  std::vector<std::string> ids(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        // Store errors would show up as a count mismatch below.
        (void)store_->Enqueue(Slack("C" + std::to_string(t)), kT0);
      }
      ids[t] = store_->Enqueue(Slack("C1", "same-key"), kT0)->id;
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const std::string& id : ids) {
    EXPECT_EQ(id, ids[0]);
  }
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kQueued), 8u * 50 + 1);
  ExpectCountsMatchScan();
  const StoreStats stats = store_->Stats();
  EXPECT_GT(stats.writes, 0u);
  EXPECT_LE(stats.wal_syncs, stats.writes);
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreTest, ::testing::ValuesIn(ContractStoreKinds()),
                         StoreKindName);

}  // namespace
}  // namespace egress::storage
