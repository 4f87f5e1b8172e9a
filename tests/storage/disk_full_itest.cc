// The RocksDB store on a small tmpfs that the test fills up: writes fail with Unavailable and
// the store says why, nothing acknowledged is lost, and Recover gets it writing again once
// there is space, by RocksDB's Resume or, when Resume would keep a broken write-ahead log, by
// reopening the database (docs/storage.md, "Faults"). Needs root for the mount; skipped
// otherwise.

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "storage/rocks_queue_store.h"
#include "tests/support/small_filesystem.h"

namespace egress::storage {
namespace {

constexpr int64_t kT0 = 1'767'225'600'000;

class DiskFullTest : public ::testing::Test {
 protected:
  DiskFullTest() : fs_(8 << 20) { options_.path = fs_.Sub("store"); }

  void SetUp() override {
    if (!fs_.mounted()) {
      GTEST_SKIP() << fs_.skip_reason();
    }
  }

  void Open() {
    auto store = OpenRocksQueueStore(options_, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    store_ = std::move(*store);
  }

  static NewDelivery Delivery(int n) {
    return {
        .tenant = "acme",
        .platform = "webhook",
        .destination = "http://127.0.0.1:9/hook",
        .credential = "hooks",
        .payload = R"({"n":)" + std::to_string(n) + R"(,"pad":")" + std::string(2000, 'x') + "\"}"};
  }

  // Enqueues until a write fails (at most `max`), keeping the ids acknowledged; returns the
  // failure.
  Status EnqueueUntilFull(int max) {
    for (int n = 0; n < max; ++n) {
      auto r = store_->Enqueue(Delivery(n), kT0);
      if (!r) {
        return r.error();
      }
      acked_.push_back(r->id);
    }
    return Status::Ok();
  }

  // Recover as the service does once the space is back: again while it reports a fault that
  // arrived during the attempt (a background job of the failed database finishing late), at most
  // five times. Ok means the store takes writes.
  Status RecoverOnceSpaceIsBack() {
    Status s = store_->Recover();
    for (int attempt = 1; !s.ok() && attempt < 5; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      s = store_->Recover();
    }
    return s;
  }

  // Every acknowledged delivery is there, and the counters agree with the records.
  void ExpectAckedKept() {
    for (const std::string& id : acked_) {
      auto d = store_->Get(id);
      ASSERT_TRUE(d.has_value()) << id << ": " << d.error().ToString();
    }
    auto counts = store_->Counts();
    auto scanned = store_->ScanCounts();
    ASSERT_TRUE(counts.has_value() && scanned.has_value());
    EXPECT_EQ(*counts, *scanned);
  }

  SmallFilesystem fs_;
  StoreOptions options_;
  std::unique_ptr<QueueStore> store_;
  std::vector<std::string> acked_;
};

// Verifies that a full disk makes writes fail with Unavailable naming no path while reads go
// on, that the store reports no_space during a write, that Recover fails while the disk is
// full and succeeds once the space is back (Resume), and that everything acknowledged before,
// and written after, survives a reopen.
TEST_F(DiskFullTest, FullDiskRefusesWritesUntilRecovered) {
  Open();
  ASSERT_TRUE(EnqueueUntilFull(10).ok());
  ASSERT_TRUE(fs_.Fill().ok());
  Status full = EnqueueUntilFull(100'000);
  ASSERT_FALSE(full.ok()) << "the disk never filled";
  StoreHealth h = store_->Health();
  EXPECT_FALSE(h.healthy);
  EXPECT_EQ(h.reason, "no_space");
  EXPECT_EQ(h.during, "write");
  EXPECT_NE(h.detail.find("No space left on device"), std::string::npos) << h.detail;
  auto refused = store_->Enqueue(Delivery(-1), kT0);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kUnavailable);
  EXPECT_EQ(refused.error().message().find(fs_.path()), std::string::npos)
      << refused.error().message();
  auto lease = store_->Apply(acked_[0], {.to = DeliveryState::kInFlight, .at_ms = kT0});
  EXPECT_FALSE(lease.has_value());  // nothing is handed out while outcomes cannot be written
  ExpectAckedKept();
  EXPECT_FALSE(store_->Recover().ok());  // Resume must flush: no space for it
  EXPECT_FALSE(store_->Health().healthy);

  ASSERT_TRUE(fs_.Free().ok());
  Status recovered = RecoverOnceSpaceIsBack();
  ASSERT_TRUE(recovered.ok()) << recovered.ToString();
  EXPECT_TRUE(store_->Health().healthy);
  ASSERT_TRUE(EnqueueUntilFull(5).ok());
  auto leased = store_->Apply(acked_[0], {.to = DeliveryState::kInFlight, .at_ms = kT0});
  ASSERT_TRUE(leased.has_value()) << leased.error().ToString();
  ASSERT_TRUE(store_->Apply(acked_[0], {.to = DeliveryState::kDelivered, .at_ms = kT0}));
  ExpectAckedKept();
  ASSERT_TRUE(store_->Close().ok());
  Open();
  ExpectAckedKept();
  EXPECT_EQ(store_->Get(acked_[0])->state, DeliveryState::kDelivered);
}

// Verifies the case RocksDB's Resume cannot get past: the first write after an open (every
// memtable empty) fails, so Resume would keep the broken write-ahead log and the next write
// would abort the process (Debian's RocksDB asserts). Recover reopens the database instead: a
// delivery leased before keeps its lease and its outcome is written, and writes go on.
TEST_F(DiskFullTest, FailedFirstWriteAfterOpenRecoversByReopening) {
  Open();
  ASSERT_TRUE(EnqueueUntilFull(20).ok());
  ASSERT_TRUE(store_->Close().ok());
  Open();  // every memtable empty: the open flushed what the log held
  auto leased = store_->Apply(acked_[0], {.to = DeliveryState::kInFlight, .at_ms = kT0});
  ASSERT_TRUE(leased.has_value()) << leased.error().ToString();  // a lease writes nothing
  ASSERT_TRUE(fs_.Fill().ok());
  auto refused = store_->Apply(acked_[0], {.to = DeliveryState::kDelivered, .at_ms = kT0});
  ASSERT_FALSE(refused.has_value());
  EXPECT_FALSE(store_->Health().healthy);
  EXPECT_EQ(store_->Get(acked_[0])->state, DeliveryState::kInFlight);

  ASSERT_TRUE(fs_.Free().ok());
  Status recovered = RecoverOnceSpaceIsBack();
  ASSERT_TRUE(recovered.ok()) << recovered.ToString();
  EXPECT_TRUE(store_->Health().healthy);
  EXPECT_EQ(store_->Get(acked_[0])->state, DeliveryState::kInFlight);
  auto delivered = store_->Apply(acked_[0], {.to = DeliveryState::kDelivered, .at_ms = kT0});
  ASSERT_TRUE(delivered.has_value()) << delivered.error().ToString();
  ASSERT_TRUE(EnqueueUntilFull(5).ok());  // the write that used to abort the process
  ExpectAckedKept();
  ASSERT_TRUE(store_->Close().ok());
  Open();
  ExpectAckedKept();
  EXPECT_EQ(store_->Get(acked_[0])->state, DeliveryState::kDelivered);
}

}  // namespace
}  // namespace egress::storage
