// The store's on-disk format marker and the migrations from formats 2 and 3 (docs/storage.md,
// "Open"); the one from format 4 is in rocks_queue_store_stored_bytes_test.cc.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/index_keys.h"
#include "storage/rocks_queue_store.h"
#include "storage/rocks_schema.h"
#include "tests/support/raw_store.h"
#include "tests/support/store_audit.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {
namespace {

constexpr int64_t kT0 = 1'767'225'600'000;

NewDelivery Hook(std::string url) {
  NewDelivery d;
  d.tenant = "acme";
  d.platform = "webhook";
  d.destination = std::move(url);
  d.credential = "hooks";
  d.payload = R"({"n":1})";
  return d;
}

// Verifies that a new store indexes only deferred deliveries by due time, and that a format-2
// store (which also indexed queued ones) opens read-only as it is and is migrated by a
// writable open: stale due entries go, the deferred one stays, and leasing still finds both.
TEST(StoreFormatTest, MigratesFormat2DueIndex) {
  TempDir dir;
  StoreOptions options;
  options.path = dir.Sub("store");
  std::string queued, deferred;
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    queued = (*store)->Enqueue(Hook("http://127.0.0.1:9/a"), kT0)->id;
    deferred = (*store)->Enqueue(Hook("http://127.0.0.1:9/b"), kT0)->id;
    ASSERT_TRUE((*store)->Apply(deferred, {.to = DeliveryState::kDeferred,
                                           .at_ms = kT0,
                                           .next_attempt_ms = kT0 + 1'000,
                                           .reason = "retry_after"}));
  }
  {
    RawStore raw(options.path);
    EXPECT_EQ(raw.Get(Family::kMeta, "format"), "relay-egress-store/5");
    EXPECT_EQ(raw.Keys(Family::kDue), std::vector<std::string>{DueKey(kT0 + 1'000, deferred)});
    // What format 2 had: the marker, a due entry for the queued delivery, and a stale one.
    raw.Put(Family::kMeta, "format", "relay-egress-store/2");
    raw.Put(Family::kDue, DueKey(kT0, queued), "");
    raw.Put(Family::kDue, DueKey(kT0, "01JZZZZZZZZZZZZZZZZZZZZZZZ"), "");
  }
  {
    auto reader = OpenRocksQueueStoreReadOnly(options);
    ASSERT_TRUE(reader.has_value()) << reader.error().ToString();
    EXPECT_EQ((*reader)->Get(queued)->state, DeliveryState::kQueued);
  }
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    auto leased = (*store)->LeaseDue(kT0 + 1'000, 10);
    ASSERT_TRUE(leased.has_value()) << leased.error().ToString();
    ASSERT_EQ(leased->size(), 2u);
    EXPECT_EQ((*leased)[0].id, queued);  // due first
    EXPECT_EQ((*leased)[1].id, deferred);
  }
  RawStore raw(options.path);
  EXPECT_EQ(raw.Get(Family::kMeta, "format"), "relay-egress-store/5");  // through 3 and 4
  EXPECT_EQ(raw.Keys(Family::kDue), std::vector<std::string>{DueKey(kT0 + 1'000, deferred)});
}

// Verifies the migration from format 3, whose retention index held delivered and cancelled
// records only, keyed by finish time: a read-only open reads it as it is; a writable open
// rebuilds the index for every finished record (dead ones and idempotency keys included), drops
// the format-3 entries, and retention then works on the migrated store, leaving no orphan.
TEST(StoreFormatTest, MigratesFormat3RetentionIndex) {
  TempDir dir;
  StoreOptions options;
  options.path = dir.Sub("store");
  std::string delivered, cancelled, dead, queued;
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    QueueStore& s = **store;
    NewDelivery keyed = Hook("http://127.0.0.1:9/a");
    keyed.idempotency_key = "order-1";
    delivered = s.Enqueue(keyed, kT0)->id;
    cancelled = s.Enqueue(Hook("http://127.0.0.1:9/a"), kT0)->id;
    dead = s.Enqueue(Hook("http://127.0.0.1:9/a"), kT0)->id;
    queued = s.Enqueue(Hook("http://127.0.0.1:9/b"), kT0)->id;
    ASSERT_TRUE(s.Apply(delivered, {.to = DeliveryState::kInFlight, .at_ms = kT0}));
    ASSERT_TRUE(s.Apply(delivered, {.to = DeliveryState::kDelivered, .at_ms = kT0 + 1}));
    ASSERT_TRUE(s.Apply(cancelled, {.to = DeliveryState::kCancelled, .at_ms = kT0 + 2}));
    ASSERT_TRUE(s.Apply(dead, {.to = DeliveryState::kDead, .at_ms = kT0 + 3, .reason = "x"}));
  }
  {
    // What format 3 had: its marker and be64(finished_ms) · id for delivered and cancelled.
    RawStore raw(options.path);
    for (const std::string& key : raw.Keys(Family::kDone)) {
      raw.Delete(Family::kDone, key);
    }
    raw.Put(Family::kDone, DueKey(kT0 + 1, delivered), "");
    raw.Put(Family::kDone, DueKey(kT0 + 2, cancelled), "");
    raw.Put(Family::kMeta, "format", "relay-egress-store/3");
  }
  {
    auto reader = OpenRocksQueueStoreReadOnly(options);
    ASSERT_TRUE(reader.has_value()) << reader.error().ToString();
    EXPECT_EQ((*reader)->Get(dead)->state, DeliveryState::kDead);
  }
  {
    RawStore raw(options.path);
    EXPECT_EQ(raw.Get(Family::kMeta, "format"), "relay-egress-store/3");  // untouched by reading
  }
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
  }
  {
    RawStore raw(options.path);
    EXPECT_EQ(raw.Get(Family::kMeta, "format"), "relay-egress-store/5");  // through 4
    const std::vector<std::string> want = {
        DoneKey(DeliveryState::kDelivered, kT0 + 1, delivered),
        DoneKey(DeliveryState::kDead, kT0 + 3, dead),
        DoneKey(DeliveryState::kCancelled, kT0 + 2, cancelled),
        IdemExpiryKey(kT0 + 1, delivered),
    };
    EXPECT_EQ(raw.Keys(Family::kDone), want);
    EXPECT_EQ(raw.Get(Family::kDone, IdemExpiryKey(kT0 + 1, delivered)),
              IdemKey("acme", "order-1"));
  }
  for (const std::string& problem : AuditStore(options.path)) {
    ADD_FAILURE() << problem;
  }
  auto store = OpenRocksQueueStore(options, kT0);
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
  auto purged = (*store)->PurgeExpired(RetentionPolicy(), kT0 + 31LL * 24 * 3'600'000, 100);
  ASSERT_TRUE(purged.has_value()) << purged.error().ToString();
  EXPECT_EQ(purged->delivered, 1u);
  EXPECT_EQ(purged->cancelled, 1u);
  EXPECT_EQ(purged->dead, 1u);
  EXPECT_EQ((*store)->Get(queued)->state, DeliveryState::kQueued);
  store->reset();
  for (const std::string& problem : AuditStore(options.path)) {
    ADD_FAILURE() << problem;
  }
}

// Verifies that a store of a format this build does not know is refused, naming both formats.
TEST(StoreFormatTest, RefusesUnknownFormat) {
  TempDir dir;
  StoreOptions options;
  options.path = dir.Sub("store");
  ASSERT_TRUE(OpenRocksQueueStore(options, kT0).has_value());
  RawStore(options.path).Put(Family::kMeta, "format", "relay-egress-store/1");
  auto store = OpenRocksQueueStore(options, kT0);
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(store.error().message().find("relay-egress-store/1"), std::string::npos);
  EXPECT_NE(store.error().message().find("relay-egress-store/5"), std::string::npos);
}

}  // namespace
}  // namespace egress::storage
