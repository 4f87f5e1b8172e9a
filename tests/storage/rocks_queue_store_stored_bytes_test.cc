// The RocksDB store's per-tenant stored bytes (docs/storage.md, "Stored bytes"): exact through
// enqueue, leases, outcomes, deaths, replays, purges and restarts, checked against a scan of the
// records (ScanStoredBytes) and, with the store closed, against the raw records (AuditStore).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/rocks_queue_store.h"
#include "storage/rocks_schema.h"
#include "tests/support/raw_store.h"
#include "tests/support/store_audit.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {
namespace {

constexpr int64_t kT0 = 1'767'225'600'000;
constexpr int64_t kDay = 24LL * 3'600'000;
constexpr char kHexKey[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

NewDelivery Hook(const std::string& tenant, size_t payload_bytes, std::string key = "") {
  return NewDelivery{.tenant = tenant,
                     .platform = "webhook",
                     .destination = "http://127.0.0.1:9/h",
                     .credential = "hooks",
                     .payload = std::string(payload_bytes, 'p'),
                     .idempotency_key = std::move(key)};
}

Attempt Failure(int64_t at_ms) {
  return Attempt{.at_ms = at_ms,
                 .duration_ms = 12,
                 .http_status = 503,
                 .detail = "upstream unavailable, retrying later",
                 .rate_limit_headers = {{"retry-after", "30"}}};
}

class StoredBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.path = dir_.Sub("store");
    Reopen();
  }

  void Reopen() {
    store_.reset();
    auto opened = OpenRocksQueueStore(options_, kT0);
    ASSERT_TRUE(opened) << opened.error().ToString();
    store_ = std::move(*opened);
  }

  std::string Enqueue(const NewDelivery& d, int64_t at_ms = kT0) {
    auto r = store_->Enqueue(d, at_ms);
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? r->id : "";
  }

  void Apply(const std::string& id, const StateChange& change) {
    auto r = store_->Apply(id, change);
    ASSERT_TRUE(r) << r.error().ToString();
  }

  uint64_t Bytes(const std::string& tenant) {
    auto n = store_->TenantStoredBytes(tenant);
    EXPECT_TRUE(n) << n.error().ToString();
    return n ? *n : 0;
  }

  // The size of one record as the disk holds it: its id and its encoded bytes.
  uint64_t RecordBytes(const std::string& id) {
    store_.reset();
    const uint64_t n = id.size() + RawStore(options_.path).Get(Family::kJobs, id).size();
    Reopen();
    return n;
  }

  // The counters against a scan of the records, then (closing the store) the counters on disk
  // against the raw records.
  void ExpectExact() {
    auto scanned = store_->ScanStoredBytes();
    ASSERT_TRUE(scanned) << scanned.error().ToString();
    for (const char* tenant : {"acme", "globex"}) {
      auto it = scanned->find(tenant);
      EXPECT_EQ(Bytes(tenant), it == scanned->end() ? 0 : it->second) << tenant;
    }
    store_.reset();
    for (const std::string& problem : AuditStore(options_.path)) {
      ADD_FAILURE() << problem;
    }
    Reopen();
  }

  TempDir dir_;
  StoreOptions options_;
  std::unique_ptr<QueueStore> store_;
};

// Verifies that a tenant's stored bytes are exactly the size of its records (id and encoded
// bytes) through enqueue, a lease, a deferral that adds history, delivery, death, a replay, a
// cancel, an operator purge and a retention purge, that dead records count until retention
// removes them, that other tenants are unaffected, and that the counts survive a restart.
TEST_F(StoredBytesTest, CountsEveryRecordExactlyThroughItsLife) {
  EXPECT_EQ(Bytes("acme"), 0u);
  const std::string delivered = Enqueue(Hook("acme", 1000, "order-1"));
  const std::string dead = Enqueue(Hook("acme", 5000));
  const std::string cancelled = Enqueue(Hook("acme", 300));
  const std::string other = Enqueue(Hook("globex", 700));
  const uint64_t enqueued = RecordBytes(delivered) + RecordBytes(dead) + RecordBytes(cancelled);
  EXPECT_EQ(Bytes("acme"), enqueued);
  EXPECT_GT(enqueued, 6300u);  // the payloads are in it
  EXPECT_EQ(Bytes("globex"), RecordBytes(other));
  ExpectExact();

  // A lease writes nothing: the disk's record still counts. Its outcome adds history.
  auto leased = store_->LeaseDue(kT0, 10);
  ASSERT_TRUE(leased) << leased.error().ToString();
  EXPECT_EQ(Bytes("acme"), enqueued);
  StateChange defer{.to = DeliveryState::kDeferred,
                    .at_ms = kT0 + 1,
                    .next_attempt_ms = kT0 + 60'000,
                    .reason = "http_503",
                    .attempt = Failure(kT0 + 1),
                    .consume_attempt = true};
  Apply(delivered, defer);
  Apply(dead, defer);
  EXPECT_GT(Bytes("acme"), enqueued);
  ExpectExact();

  Apply(delivered, {.to = DeliveryState::kInFlight, .at_ms = kT0 + 60'000});
  Apply(delivered, {.to = DeliveryState::kDelivered, .at_ms = kT0 + 60'001});
  Apply(dead, {.to = DeliveryState::kDead, .at_ms = kT0 + 2, .reason = "http_404"});
  Apply(cancelled, {.to = DeliveryState::kCancelled, .at_ms = kT0 + 3});
  ExpectExact();
  const uint64_t finished = Bytes("acme");
  EXPECT_EQ(finished, RecordBytes(delivered) + RecordBytes(dead) + RecordBytes(cancelled));

  // A replay brings the dead one back (another record size), and it dies again.
  Apply(dead, {.to = DeliveryState::kQueued, .at_ms = kT0 + 4, .reset_attempts = true});
  ExpectExact();
  Apply(dead, {.to = DeliveryState::kDead, .at_ms = kT0 + 5, .reason = "http_404"});
  ExpectExact();

  // Restart: the counts are read back as they were.
  const uint64_t before_restart = Bytes("acme");
  Reopen();
  EXPECT_EQ(Bytes("acme"), before_restart);
  EXPECT_EQ(Bytes("globex"), RecordBytes(other));

  // The operator purges the cancelled one; retention the delivered one after 7 days, while the
  // dead one still counts until its 30 days have passed.
  const uint64_t cancelled_bytes = RecordBytes(cancelled);
  ASSERT_TRUE(store_->Purge(cancelled).ok());
  EXPECT_EQ(Bytes("acme"), before_restart - cancelled_bytes);
  ExpectExact();
  const uint64_t dead_bytes = RecordBytes(dead);
  auto purged = store_->PurgeExpired(RetentionPolicy(), kT0 + 8 * kDay, 100);
  ASSERT_TRUE(purged) << purged.error().ToString();
  EXPECT_EQ(purged->delivered, 1u);
  EXPECT_EQ(Bytes("acme"), dead_bytes);
  ExpectExact();
  purged = store_->PurgeExpired(RetentionPolicy(), kT0 + 31 * kDay, 100);
  ASSERT_TRUE(purged) << purged.error().ToString();
  EXPECT_EQ(purged->dead, 1u);
  EXPECT_EQ(Bytes("acme"), 0u);
  EXPECT_EQ(Bytes("globex"), RecordBytes(other));
  ExpectExact();
}

// Verifies that a batch of changes (a lease and its outcome, two changes of one id) and a lease
// lost by a restart keep the count exact.
TEST_F(StoredBytesTest, BatchesAndLostLeasesStayExact) {
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(Enqueue(Hook("acme", 100 + 10 * i)));
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
  ExpectExact();  // ids[2]'s lease is lost here: waiting again, its record unchanged
  Apply(ids[2], {.to = DeliveryState::kInFlight, .at_ms = kT0 + 3});
  Apply(ids[2], {.to = DeliveryState::kDelivered, .at_ms = kT0 + 4});
  auto leased = store_->LeaseDue(kT0 + 10, 10);
  ASSERT_TRUE(leased) << leased.error().ToString();
  EXPECT_EQ(leased->size(), 2u);  // ids[0] (due) and ids[3]
  for (const Delivery& d : *leased) {
    Apply(d.id, defer);
  }
  ExpectExact();
}

// Verifies that a store of format 4, which counted no stored bytes, is read as it is by a
// read-only open (whose TenantStoredBytes says it cannot answer) and is counted by the first
// writable open, exactly, then moves to format 5.
TEST_F(StoredBytesTest, MigratesFormat4ByCountingEveryRecord) {
  Enqueue(Hook("acme", 400, "k1"));
  const std::string dead = Enqueue(Hook("acme", 900));
  Enqueue(Hook("globex", 50));
  Apply(dead, {.to = DeliveryState::kDead, .at_ms = kT0 + 1, .reason = "http_404"});
  const uint64_t acme = Bytes("acme");
  const uint64_t globex = Bytes("globex");
  store_.reset();
  {
    RawStore raw(options_.path);
    EXPECT_EQ(raw.Get(Family::kMeta, "format"), "relay-egress-store/5");
    raw.Delete(Family::kMeta, StoredBytesKey("acme"));
    raw.Delete(Family::kMeta, StoredBytesKey("globex"));
    raw.Put(Family::kMeta, "format", "relay-egress-store/4");
  }
  {
    auto reader = OpenRocksQueueStoreReadOnly(options_);
    ASSERT_TRUE(reader) << reader.error().ToString();
    auto n = (*reader)->TenantStoredBytes("acme");
    ASSERT_FALSE(n);
    EXPECT_EQ(n.error().code(), Status::Code::kFailedPrecondition) << n.error().ToString();
  }
  Reopen();
  EXPECT_EQ(Bytes("acme"), acme);
  EXPECT_EQ(Bytes("globex"), globex);
  ExpectExact();
  store_.reset();
  EXPECT_EQ(RawStore(options_.path).Get(Family::kMeta, "format"), "relay-egress-store/5");
  Reopen();
}

// Verifies that sealing the destinations a store wrote without a secrets key (the first open
// with one) moves the stored bytes of the records it rewrites, exactly.
TEST_F(StoredBytesTest, SealingDestinationsMovesTheirBytes) {
  NewDelivery secret = Hook("acme", 200);
  secret.platform = "discord";
  secret.destination = "webhooks/123456/abcdefTOKEN";
  Enqueue(secret);
  Enqueue(Hook("acme", 200));
  const uint64_t plain = Bytes("acme");
  store_.reset();
  Result<SecretsKey> key = SecretsKey::Parse(kHexKey);
  ASSERT_TRUE(key);
  options_.secrets_key = *key;
  Reopen();
  EXPECT_GT(Bytes("acme"), plain);  // the sealed destination is longer
  ExpectExact();
}

// Verifies that EnqueuedBytesBound is never below what an enqueue adds to the tenant's stored
// bytes, with a plain destination and with one sealed at rest, and stays close to it.
TEST_F(StoredBytesTest, EnqueuedBytesBoundCoversTheRecordWritten) {
  NewDelivery sealed = Hook("acme", 3000, "order-9");
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
  for (const NewDelivery& d : {Hook("acme", 3000, "order-8"), sealed}) {
    const uint64_t before = Bytes("acme");
    Enqueue(d);
    const uint64_t added = Bytes("acme") - before;
    EXPECT_GE(EnqueuedBytesBound(d), added);
    EXPECT_LE(EnqueuedBytesBound(d), added + 512);
  }
}

}  // namespace
}  // namespace egress::storage
