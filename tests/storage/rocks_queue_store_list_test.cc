// RocksQueueStore: List by creation time, and the read-only open.

#include <gtest/gtest.h>

#include "storage/rocks_queue_store.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {
namespace {

constexpr int64_t kT0 = 1'767'225'600'000;

NewDelivery Hook(std::string tenant = "acme") {
  return NewDelivery{.tenant = std::move(tenant),
                     .platform = "webhook",
                     .destination = "http://127.0.0.1:1/h",
                     .credential = "hooks",
                     .payload = R"({"text":"hi"})"};
}

class StoreListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.path = dir_.Sub("store");
    auto opened = OpenRocksQueueStore(options_, kT0);
    ASSERT_TRUE(opened) << opened.error().ToString();
    store_ = std::move(*opened);
  }

  std::string Add(int64_t at_ms, std::string tenant = "acme") {
    auto r = store_->Enqueue(Hook(std::move(tenant)), at_ms);
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? r->id : "";
  }

  std::vector<std::string> Ids(ListFilter f) {
    std::vector<std::string> out;
    while (true) {
      auto page = store_->List(f);
      EXPECT_TRUE(page) << page.error().ToString();
      if (!page) {
        return out;
      }
      for (const Delivery& d : page->deliveries) {
        out.push_back(d.id);
      }
      if (page->next_cursor.empty()) {
        return out;
      }
      f.after_id = page->next_cursor;
    }
  }

  TempDir dir_;
  StoreOptions options_;
  std::unique_ptr<QueueStore> store_;
};

// Verifies since (inclusive) and until (exclusive) select by created_ms, with and without a state.
TEST_F(StoreListTest, FiltersByCreationTime) {
  const std::string a = Add(kT0), b = Add(kT0 + 1000), c = Add(kT0 + 2000), d = Add(kT0 + 3000);
  using V = std::vector<std::string>;
  EXPECT_EQ(Ids({.since_ms = kT0 + 1000}), (V{b, c, d}));
  EXPECT_EQ(Ids({.until_ms = kT0 + 2000}), (V{a, b}));
  EXPECT_EQ(Ids({.since_ms = kT0 + 500, .until_ms = kT0 + 2500}), (V{b, c}));
  EXPECT_EQ(Ids({.state = DeliveryState::kQueued, .since_ms = kT0 + 2000}), (V{c, d}));
  EXPECT_TRUE(Ids({.since_ms = kT0 + 2000, .until_ms = kT0 + 2000}).empty());
  EXPECT_TRUE(Ids({.since_ms = kT0 + 9000}).empty());
}

// Verifies that a since bound combines with the cursor and other filters, page by page.
TEST_F(StoreListTest, SinceWithCursorAndFilters) {
  std::vector<std::string> beta;
  for (int i = 0; i < 10; ++i) {
    Add(kT0 + i);
    beta.push_back(Add(kT0 + i, "beta"));
  }
  ListFilter f{.tenant = "beta", .since_ms = kT0 + 4, .limit = 2};
  auto first = store_->List(f);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->deliveries.size(), 2u);
  EXPECT_EQ(first->deliveries[0].id, beta[4]);
  EXPECT_EQ(Ids(f), std::vector<std::string>(beta.begin() + 4, beta.end()));
  f.after_id = beta[7];  // a cursor past the since bound wins
  EXPECT_EQ(Ids(f), std::vector<std::string>(beta.begin() + 8, beta.end()));
}

// Verifies that a delivery created after the wall clock stepped back (its id carries the later
// time) is still selected by its created_ms.
TEST_F(StoreListTest, ClockStepBackKeepsCreatedTime) {
  Add(kT0 + 5000);
  const std::string stepped = Add(kT0 + 1000);
  EXPECT_EQ(Ids({.since_ms = kT0 + 500, .until_ms = kT0 + 2000}),
            std::vector<std::string>{stepped});
}

// Verifies that a read-only open sees the data while the store is held, refuses every write
// with FailedPrecondition, and shows the holder's leases (in its memory only) as queued.
TEST_F(StoreListTest, ReadOnlyOpenWhileHeld) {
  const std::string id = Add(kT0);
  Add(kT0 + 1);
  auto leased = store_->LeaseDue(kT0 + 10, 1);
  ASSERT_TRUE(leased && leased->size() == 1u);
  auto ro = OpenRocksQueueStoreReadOnly(options_);
  ASSERT_TRUE(ro) << ro.error().ToString();
  QueueStore& r = **ro;
  EXPECT_EQ(r.Get(id)->state, DeliveryState::kQueued);
  EXPECT_EQ(CountOf(*r.Counts(), DeliveryState::kInFlight), 0u);
  EXPECT_EQ(CountOf(*r.Counts(), DeliveryState::kQueued), 2u);
  EXPECT_TRUE(r.List({.state = DeliveryState::kInFlight})->deliveries.empty());
  EXPECT_EQ(r.List({})->deliveries.size(), 2u);
  EXPECT_EQ(r.ListDestinations("", 10)->size(), 1u);
  auto expect_read_only = [](const Status& s) {
    EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
    EXPECT_EQ(s.message(), "store opened read-only");
  };
  expect_read_only(r.Enqueue(Hook(), kT0).error());
  expect_read_only(r.EnqueueBatch({Hook()}, kT0).error());
  expect_read_only(r.Apply(id, {.to = DeliveryState::kQueued, .at_ms = kT0}).error());
  expect_read_only(r.LeaseDue(kT0 + 10, 10).error());
  expect_read_only(r.PurgeExpired(RetentionPolicy(), kT0, 10).error());
  expect_read_only(r.Purge(id));
  expect_read_only(r.PutSetting("k", "v"));
  EXPECT_TRUE(r.Close().ok());
  // The holder still owns the store and sees nothing changed.
  EXPECT_EQ(store_->Get(id)->state, DeliveryState::kInFlight);
  EXPECT_TRUE(store_->Enqueue(Hook(), kT0 + 20));
}

// Verifies that the read-only open finds no store in a missing or empty directory.
TEST_F(StoreListTest, ReadOnlyOpenNeedsAStore) {
  auto missing = OpenRocksQueueStoreReadOnly({.path = dir_.Sub("nothing")});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace egress::storage
