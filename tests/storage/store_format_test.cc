// The store's on-disk format marker and the migration from format 2 (docs/storage.md, "Open").

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/index_keys.h"
#include "storage/rocks_queue_store.h"
#include "storage/rocks_schema.h"
#include "tests/support/raw_store.h"
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
    EXPECT_EQ(raw.Get(Family::kMeta, "format"), "relay-egress-store/3");
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
  EXPECT_EQ(raw.Get(Family::kMeta, "format"), "relay-egress-store/3");
  EXPECT_EQ(raw.Keys(Family::kDue), std::vector<std::string>{DueKey(kT0 + 1'000, deferred)});
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
  EXPECT_NE(store.error().message().find("relay-egress-store/3"), std::string::npos);
}

}  // namespace
}  // namespace egress::storage
