// The RocksDB store's per-tenant stored bytes where they meet what that store alone does at open
// (docs/storage.md, "Stored bytes"): the migration from format 4, which counted none, and the
// sealing of destinations written without a secrets key. What every store must count is in
// queue_store_contract_stored_bytes_test.cc.

#include <string>

#include <gtest/gtest.h>

#include "storage/index_keys.h"
#include "storage/rocks_queue_store.h"
#include "storage/rocks_schema.h"
#include "tests/storage/queue_store_contract.h"
#include "tests/support/raw_store.h"

namespace egress::storage {
namespace {

constexpr char kHexKey[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

using RocksStoredBytesTest = RocksQueueStoreFixture;

// Verifies that a store of format 4, which counted no stored bytes, is read as it is by a
// read-only open (whose TenantStoredBytes says it cannot answer) and is counted by the first
// writable open, exactly, then moves to format 5.
TEST_F(RocksStoredBytesTest, MigratesFormat4ByCountingEveryRecord) {
  Enqueue(Hook({.key = "k1", .payload = std::string(400, 'p')}));
  const std::string dead = Enqueue(Hook({.payload = std::string(900, 'p')}));
  Enqueue(Hook({.tenant = "globex", .payload = std::string(50, 'p')}));
  Apply(dead, {.to = DeliveryState::kDead, .at_ms = kT0 + 1, .reason = "http_404"});
  const uint64_t acme = StoredBytes("acme");
  const uint64_t globex = StoredBytes("globex");
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
  EXPECT_EQ(StoredBytes("acme"), acme);
  EXPECT_EQ(StoredBytes("globex"), globex);
  ExpectStoredBytesExact();
  store_.reset();
  EXPECT_EQ(RawStore(options_.path).Get(Family::kMeta, "format"), "relay-egress-store/5");
  Reopen();
}

// Verifies that sealing the destinations a store wrote without a secrets key (the first open
// with one) moves the stored bytes of the records it rewrites, exactly.
TEST_F(RocksStoredBytesTest, SealingDestinationsMovesTheirBytes) {
  NewDelivery secret = Hook({.payload = std::string(200, 'p')});
  secret.platform = "discord";
  secret.destination = "webhooks/123456/abcdefTOKEN";
  Enqueue(secret);
  Enqueue(Hook({.payload = std::string(200, 'p')}));
  const uint64_t plain = StoredBytes("acme");
  store_.reset();
  Result<SecretsKey> key = SecretsKey::Parse(kHexKey);
  ASSERT_TRUE(key);
  options_.secrets_key = *key;
  Reopen();
  EXPECT_GT(StoredBytes("acme"), plain);  // the sealed destination is longer
  ExpectStoredBytesExact();
}

}  // namespace
}  // namespace egress::storage
