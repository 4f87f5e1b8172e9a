// RunRetentionPass (dispatcher/service/retention.h) over a real RocksDB store: slices until
// nothing is due, stops when asked, reports errors.

#include "dispatcher/service/retention.h"

#include <vector>

#include <gtest/gtest.h>

#include "storage/rocks_queue_store.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using storage::DeliveryState;
using storage::PurgeCounts;

constexpr int64_t kT0 = 1'767'225'600'000;
constexpr int64_t kDay = 86'400'000;

class RetentionPassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = storage::OpenRocksQueueStore({.path = dir_.Sub("store")}, kT0);
    ASSERT_TRUE(opened) << opened.error().ToString();
    store_ = std::move(*opened);
    for (int i = 0; i < 25; ++i) {
      storage::NewDelivery d{.tenant = "acme",
                             .platform = "webhook",
                             .destination = "http://127.0.0.1:1/h",
                             .credential = "hooks",
                             .payload = "{}"};
      auto r = store_->Enqueue(d, kT0);
      ASSERT_TRUE(r) << r.error().ToString();
      ASSERT_TRUE(store_->Apply(r->id, {.to = DeliveryState::kCancelled, .at_ms = kT0}));
    }
  }

  TempDir dir_;
  std::unique_ptr<storage::QueueStore> store_;
};

// Verifies that a pass runs slices of at most `slice` entries until none is due, reporting each.
TEST_F(RetentionPassTest, SlicesUntilDone) {
  std::vector<PurgeCounts> slices;
  auto pass = RunRetentionPass(*store_, storage::RetentionPolicy(), kT0 + 8 * kDay, 10,
                               [&](const PurgeCounts& c) {
                                 slices.push_back(c);
                                 return true;
                               });
  ASSERT_TRUE(pass) << pass.error().ToString();
  EXPECT_EQ(pass->cancelled, 25u);
  EXPECT_FALSE(pass->more);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0].cancelled, 10u);
  EXPECT_TRUE(slices[0].more);
  EXPECT_EQ(slices[2].cancelled, 5u);
  EXPECT_FALSE(slices[2].more);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kCancelled), 0u);
}

// Verifies that a pass stops after the slice whose report says stop (shutdown), saying more is due.
TEST_F(RetentionPassTest, StopsWhenAsked) {
  int calls = 0;
  auto pass = RunRetentionPass(*store_, storage::RetentionPolicy(), kT0 + 8 * kDay, 10,
                               [&](const PurgeCounts&) {
                                 ++calls;
                                 return false;
                               });
  ASSERT_TRUE(pass) << pass.error().ToString();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(pass->cancelled, 10u);
  EXPECT_TRUE(pass->more);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kCancelled), 15u);
}

// Verifies that a failing store ends the pass with its error.
TEST_F(RetentionPassTest, ReportsStoreErrors) {
  ASSERT_TRUE(store_->Close().ok());
  auto pass = RunRetentionPass(*store_, storage::RetentionPolicy(), kT0 + 8 * kDay, 10,
                               [](const PurgeCounts&) { return true; });
  ASSERT_FALSE(pass);
  EXPECT_EQ(pass.error().code(), Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace egress::service
