// The QueueStore contract, per-tenant stored bytes (docs/storage.md, "Stored bytes"): exact
// through enqueue, leases, outcomes, deaths, replays, purges and restarts, checked against a scan
// of the records (ScanStoredBytes), the records at rest (StoreSite::RecordAtRest) and, with the
// store closed, the kind's StoreSite::Audit.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/delivery_codec.h"
#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

constexpr int64_t kDay = 24LL * 3'600'000;
constexpr char kHexKey[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

NewDelivery Sized(const std::string& tenant, size_t payload_bytes, std::string key = "") {
  return Hook(
      {.tenant = tenant, .key = std::move(key), .payload = std::string(payload_bytes, 'p')});
}

Attempt Failure(int64_t at_ms) {
  return Attempt{.at_ms = at_ms,
                 .duration_ms = 12,
                 .http_status = 503,
                 .detail = "upstream unavailable, retrying later",
                 .rate_limit_headers = {{"retry-after", "30"}}};
}

using QueueStoreStoredBytesTest = QueueStoreContractTest;

// Verifies that a tenant's stored bytes are exactly the size of its records (id and encoded
// bytes) through enqueue, a lease, a deferral that adds history, delivery, death, a replay, a
// cancel, an operator purge and a retention purge, that dead records count until retention
// removes them, that other tenants are unaffected, and that the counts survive a restart.
TEST_P(QueueStoreStoredBytesTest, CountsEveryRecordExactlyThroughItsLife) {
  EXPECT_EQ(StoredBytes("acme"), 0u);
  const std::string delivered = Enqueue(Sized("acme", 1000, "order-1"));
  const std::string dead = Enqueue(Sized("acme", 5000));
  const std::string cancelled = Enqueue(Sized("acme", 300));
  const std::string other = Enqueue(Sized("globex", 700));
  const uint64_t enqueued = RecordBytes(delivered) + RecordBytes(dead) + RecordBytes(cancelled);
  EXPECT_EQ(StoredBytes("acme"), enqueued);
  EXPECT_GT(enqueued, 6300u);  // the payloads are in it
  EXPECT_EQ(StoredBytes("globex"), RecordBytes(other));
  ExpectStoredBytesExact();

  // A lease writes nothing: the disk's record still counts. Its outcome adds history.
  auto leased = store_->LeaseDue(kT0, 10);
  ASSERT_TRUE(leased) << leased.error().ToString();
  EXPECT_EQ(StoredBytes("acme"), enqueued);
  StateChange defer{.to = DeliveryState::kDeferred,
                    .at_ms = kT0 + 1,
                    .next_attempt_ms = kT0 + 60'000,
                    .reason = "http_503",
                    .attempt = Failure(kT0 + 1),
                    .consume_attempt = true};
  Apply(delivered, defer);
  Apply(dead, defer);
  EXPECT_GT(StoredBytes("acme"), enqueued);
  ExpectStoredBytesExact();

  Apply(delivered, {.to = DeliveryState::kInFlight, .at_ms = kT0 + 60'000});
  Apply(delivered, {.to = DeliveryState::kDelivered, .at_ms = kT0 + 60'001});
  Apply(dead, {.to = DeliveryState::kDead, .at_ms = kT0 + 2, .reason = "http_404"});
  Apply(cancelled, {.to = DeliveryState::kCancelled, .at_ms = kT0 + 3});
  ExpectStoredBytesExact();
  const uint64_t finished = StoredBytes("acme");
  EXPECT_EQ(finished, RecordBytes(delivered) + RecordBytes(dead) + RecordBytes(cancelled));

  // A replay brings the dead one back (another record size), and it dies again.
  Apply(dead, {.to = DeliveryState::kQueued, .at_ms = kT0 + 4, .reset_attempts = true});
  ExpectStoredBytesExact();
  Apply(dead, {.to = DeliveryState::kDead, .at_ms = kT0 + 5, .reason = "http_404"});
  ExpectStoredBytesExact();

  // Restart: the counts are read back as they were.
  const uint64_t before_restart = StoredBytes("acme");
  Reopen();
  EXPECT_EQ(StoredBytes("acme"), before_restart);
  EXPECT_EQ(StoredBytes("globex"), RecordBytes(other));

  // The operator purges the cancelled one; retention the delivered one after 7 days, while the
  // dead one still counts until its 30 days have passed.
  const uint64_t cancelled_bytes = RecordBytes(cancelled);
  ASSERT_TRUE(store_->Purge(cancelled).ok());
  EXPECT_EQ(StoredBytes("acme"), before_restart - cancelled_bytes);
  ExpectStoredBytesExact();
  const uint64_t dead_bytes = RecordBytes(dead);
  auto purged = store_->PurgeExpired(RetentionPolicy(), kT0 + 8 * kDay, 100);
  ASSERT_TRUE(purged) << purged.error().ToString();
  EXPECT_EQ(purged->delivered, 1u);
  EXPECT_EQ(StoredBytes("acme"), dead_bytes);
  ExpectStoredBytesExact();
  purged = store_->PurgeExpired(RetentionPolicy(), kT0 + 31 * kDay, 100);
  ASSERT_TRUE(purged) << purged.error().ToString();
  EXPECT_EQ(purged->dead, 1u);
  EXPECT_EQ(StoredBytes("acme"), 0u);
  EXPECT_EQ(StoredBytes("globex"), RecordBytes(other));
  ExpectStoredBytesExact();
}

// Verifies that a batch of changes (a lease and its outcome, two changes of one id) and a lease
// lost by a restart keep the count exact.
TEST_P(QueueStoreStoredBytesTest, BatchesAndLostLeasesStayExact) {
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(Enqueue(Sized("acme", 100 + 10 * i)));
  }
  StateChange defer{.to = DeliveryState::kDeferred,
                    .at_ms = kT0 + 1,
                    .next_attempt_ms = kT0 + 10,
                    .reason = "http_503",
                    .attempt = Failure(kT0 + 1)};
  auto batch = store_->ApplyBatch({
      {ids[0], {.to = DeliveryState::kInFlight, .at_ms = kT0 + 1}},
      {ids[0], defer},
      {ids[1], defer},
      {ids[1], {.to = DeliveryState::kDead, .at_ms = kT0 + 2, .reason = "http_404"}},
      {ids[2], {.to = DeliveryState::kInFlight, .at_ms = kT0 + 1}},
  });
  ASSERT_TRUE(batch) << batch.error().ToString();
  for (const auto& r : *batch) {
    ASSERT_TRUE(r) << r.error().ToString();
  }
  ExpectStoredBytesExact();  // ids[2]'s lease is lost here: waiting again, its record unchanged
  Apply(ids[2], {.to = DeliveryState::kInFlight, .at_ms = kT0 + 3});
  Apply(ids[2], {.to = DeliveryState::kDelivered, .at_ms = kT0 + 4});
  auto leased = store_->LeaseDue(kT0 + 10, 10);
  ASSERT_TRUE(leased) << leased.error().ToString();
  EXPECT_EQ(leased->size(), 2u);  // ids[0] (due) and ids[3]
  for (const Delivery& d : *leased) {
    Apply(d.id, defer);
  }
  ExpectStoredBytesExact();
}

// Verifies that EnqueuedBytesBound is never below what an enqueue adds to the tenant's stored
// bytes, with a plain destination and with one sealed at rest, and stays close to it.
TEST_P(QueueStoreStoredBytesTest, EnqueuedBytesBoundCoversTheRecordWritten) {
  NewDelivery sealed = Sized("acme", 3000, "order-9");
  sealed.platform = "discord";
  sealed.destination = "webhooks/123456/abcdefTOKEN";
  sealed.charges = {QuotaCharge{.quota = "monthly",
                                .window_ms = 30 * kDay,
                                .slice_ms = kDay / 2,
                                .expires_ms = kT0 + kDay,
                                .units = 1}};
  store_.reset();
  Result<SecretsKey> key = SecretsKey::Parse(kHexKey);
  ASSERT_TRUE(key);
  options_.secrets_key = *key;
  Reopen();
  for (const NewDelivery& d : {Sized("acme", 3000, "order-8"), sealed}) {
    const uint64_t before = StoredBytes("acme");
    Enqueue(d);
    const uint64_t added = StoredBytes("acme") - before;
    EXPECT_GE(EnqueuedBytesBound(d), added);
    EXPECT_LE(EnqueuedBytesBound(d), added + 512);
  }
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreStoredBytesTest,
                         ::testing::ValuesIn(ContractStoreKinds()), StoreKindName);

}  // namespace
}  // namespace egress::storage
