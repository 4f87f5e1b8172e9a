// What the RocksDB store alone has, beside the QueueStore contract it passes with every other
// store (queue_store_contract_*_test.cc): its directory (one holder, nothing foreign, no silent
// fresh start).

#include "storage/rocks_queue_store.h"

#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace egress::storage
