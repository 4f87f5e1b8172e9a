// What the RocksDB store alone has, beside the QueueStore contract it passes with every other
// store (queue_store_contract_*_test.cc): its directory (one holder, nothing foreign, no silent
// fresh start), the read-only open, the bytes it takes on disk and the memory it holds.

#include "storage/rocks_queue_store.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/storage/queue_store_contract.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {
namespace {

using RocksQueueStoreTest = RocksQueueStoreFixture;

// Verifies that a second open of an open store is a clear Busy error, not a fresh start.
TEST_F(RocksQueueStoreTest, SecondOpenIsBusy) {
  auto second = OpenRocksQueueStore(options_, kT0);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code(), Status::Code::kBusy);
  EXPECT_NE(second.error().message().find("in use"), std::string::npos);
}

// Verifies that a directory holding something else is refused, and so is a corrupt store.
TEST_F(RocksQueueStoreTest, RefusesForeignAndCorruptDirectories) {
  TempDir dir;
  const std::string foreign = dir.Sub("foreign");
  std::filesystem::create_directories(foreign);
  std::ofstream(foreign + "/notes.txt") << "not a store";
  auto r = OpenRocksQueueStore({.path = foreign}, kT0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(std::filesystem::exists(foreign + "/notes.txt"));

  Enqueue(Hook());
  Close();
  for (const auto& entry : std::filesystem::directory_iterator(options_.path)) {
    if (entry.path().filename().string().rfind("MANIFEST", 0) == 0) {
      std::ofstream(entry.path(), std::ios::trunc) << "garbage";
    }
  }
  auto corrupt = OpenRocksQueueStore(options_, kT0);
  ASSERT_FALSE(corrupt.has_value());
  EXPECT_TRUE(corrupt.error().code() == Status::Code::kCorruption ||
              corrupt.error().code() == Status::Code::kIoError)
      << corrupt.error().ToString();
}

// Verifies that a read-only open sees the data while the store is held, refuses every write
// with FailedPrecondition, and shows the holder's leases (in its memory only) as queued.
TEST_F(RocksQueueStoreTest, ReadOnlyOpenWhileHeld) {
  const std::string id = Enqueue(Hook(), kT0);
  Enqueue(Hook(), kT0 + 1);
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
TEST_F(RocksQueueStoreTest, ReadOnlyOpenNeedsAStore) {
  TempDir dir;
  auto missing = OpenRocksQueueStoreReadOnly({.path = dir.Sub("nothing")});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Status::Code::kNotFound);
}

// Verifies that Stats() reports the bytes the store takes on disk.
TEST_F(RocksQueueStoreTest, StatsCountDiskBytes) {
  const uint64_t empty = store_->Stats().disk_bytes;
  EXPECT_GT(empty, 0u);  // CURRENT, MANIFEST, OPTIONS, the log
  for (int i = 0; i < 50; ++i) {
    Enqueue(Hook({.payload = std::string(200, 'p')}));
  }
  EXPECT_GT(store_->Stats().disk_bytes, empty);  // the write-ahead log grew
}

// Verifies that the memory the store holds (MemoryUse) is reported and kept near its caps: 40 MB
// written go past an 8 MiB memtable budget and its 8 MiB log cap (each family's own write
// buffer is 64 MiB, so without them all of it would stay in memory; the log cap flushes first,
// the budget alone holds less tightly), reading them back fills the 1 MiB block cache and record
// cache no further than their caps, and a block cache of 0 caches nothing.
TEST_F(RocksQueueStoreTest, MemoryUseStaysWithinItsCaps) {
  constexpr size_t kMiB = 1 << 20;
  Close();
  options_.memtable_bytes = 8 * kMiB;
  options_.block_cache_bytes = kMiB;
  options_.record_cache_bytes = kMiB;
  Reopen();
  std::vector<std::string> ids;
  for (int batch = 0; batch < 40; ++batch) {
    std::vector<NewDelivery> items(100, Hook({.payload = std::string(10'000, 'p')}));
    auto written = store_->EnqueueBatch(items, kT0 + batch);
    ASSERT_TRUE(written) << written.error().ToString();
    for (const Result<EnqueueResult>& one : *written) {
      ASSERT_TRUE(one) << one.error().ToString();
      ids.push_back(one->id);
    }
  }
  StoreMemory m = store_->MemoryUse();
  // A flush takes a moment after the write that went past the budget.
  for (int i = 0; i < 100 && m.memtables > 3 * options_.memtable_bytes; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    m = store_->MemoryUse();
  }
  EXPECT_GT(m.memtables, 0u);
  EXPECT_LE(m.memtables, 3 * options_.memtable_bytes);
  for (const std::string& id : ids) {
    ASSERT_TRUE(store_->Get(id)) << id;
  }
  m = store_->MemoryUse();
  EXPECT_GT(m.block_cache, kMiB / 2);  // what the record cache could not hold was read from disk
  EXPECT_LE(m.block_cache, kMiB + 64 * 1024);
  EXPECT_GT(m.record_cache, 0u);
  EXPECT_LE(m.record_cache, kMiB);

  Close();
  options_.block_cache_bytes = 0;
  Reopen();
  for (const std::string& id : ids) {
    ASSERT_TRUE(store_->Get(id)) << id;
  }
  EXPECT_EQ(store_->MemoryUse().block_cache, 0u);
}

}  // namespace
}  // namespace egress::storage
