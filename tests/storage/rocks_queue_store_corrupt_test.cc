// Records and index entries of the RocksDB store damaged on purpose through RawStore, beyond what
// the contract's corrupt-record suite plants (queue_store_contract_corrupt_test.cc): an index
// entry with no record behind it, the index entries a repair leaves on disk, and the read-only
// open facing a damaged record (docs/storage.md, "Faults").

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/index_keys.h"
#include "storage/rocks_queue_store.h"
#include "tests/storage/queue_store_contract.h"
#include "tests/support/raw_store.h"

namespace egress::storage {
namespace {

using RocksCorruptRecordTest = RocksQueueStoreFixture;

// Verifies that repairing a deferred record cut short leaves no waiting index entry of it on
// disk: its due entry goes, and the destination index keeps the two readable deliveries only.
TEST_F(RocksCorruptRecordTest, TruncatedRecordRepairLeavesNoWaitingEntry) {
  Enqueue(Numbered(1));
  const std::string bad = Enqueue(Numbered(2));
  Enqueue(Numbered(3));
  Apply(bad, {.to = DeliveryState::kDeferred,
              .at_ms = kT0,
              .next_attempt_ms = kT0 + 60'000,
              .reason = "backoff"});
  Close();
  {
    RawStore raw(options_.path);
    std::string damaged = raw.Get(Family::kJobs, bad);
    ASSERT_GT(damaged.size(), 2u);
    damaged.resize(damaged.size() - 2);  // inside the last field (a cut between fields reads)
    raw.Put(Family::kJobs, bad, damaged);
    EXPECT_EQ(raw.Keys(Family::kDue).size(), 1u);  // the deferred one's
    EXPECT_EQ(raw.Keys(Family::kDest).size(), 3u);
  }
  Reopen();
  auto dead = store_->MoveCorruptToDead(bad, HookDestination(), kT0 + 5);
  ASSERT_TRUE(dead.has_value()) << dead.error().ToString();
  Close();
  RawStore raw(options_.path);
  EXPECT_TRUE(raw.Keys(Family::kDue).empty());
  EXPECT_EQ(raw.Keys(Family::kDest).size(), 2u);
}

// Verifies that a destination index entry with no record behind it is reported and repaired,
// and that the repaired one lists as dead.
TEST_F(RocksCorruptRecordTest, MissingRecordIsReportedThenMovedToDead) {
  const std::string a = Enqueue(Numbered(1));
  Close();
  const std::string ghost = "01KZZZZZZZZZZZZZZZZZZZZZZZ";
  {
    RawStore raw(options_.path);
    raw.Put(Family::kDest, DestIndexKey(HookDestination(), ghost), "");
  }
  Reopen();
  auto work = store_->PendingFor(HookDestination(), "", 10);
  ASSERT_TRUE(work.has_value()) << work.error().ToString();
  EXPECT_EQ(Ids(*work), std::vector<std::string>{a});
  ASSERT_EQ(work->corrupt.size(), 1u);
  EXPECT_EQ(work->corrupt[0].id, ghost);
  EXPECT_EQ(work->corrupt[0].error, "no record behind its index entry");
  auto dead = store_->MoveCorruptToDead(ghost, HookDestination(), kT0 + 5);
  ASSERT_TRUE(dead.has_value()) << dead.error().ToString();
  EXPECT_EQ(dead->reason, "corrupt_record: no record behind its index entry");
  work = store_->PendingFor(HookDestination(), "", 10);
  ASSERT_TRUE(work.has_value());
  EXPECT_EQ(Ids(*work), std::vector<std::string>{a});
  EXPECT_TRUE(work->corrupt.empty());
  auto listed = store_->List({.state = DeliveryState::kDead, .reason_prefix = "corrupt_record"});
  ASSERT_TRUE(listed.has_value()) << listed.error().ToString();
  EXPECT_EQ(listed->deliveries.size(), 1u);
  ExpectCountsMatchScan();
}

// Verifies that a store opened read-only cannot repair (it writes nothing).
TEST_F(RocksCorruptRecordTest, ReadOnlyStoreDoesNotRepair) {
  const std::string a = Enqueue(Numbered(1));
  Close();
  {
    RawStore raw(options_.path);
    raw.Put(Family::kJobs, a, "\x01garbage");
  }
  auto reader = OpenRocksQueueStoreReadOnly(options_);
  ASSERT_TRUE(reader.has_value()) << reader.error().ToString();
  auto work = (*reader)->PendingFor(HookDestination(), "", 10);
  ASSERT_TRUE(work.has_value()) << work.error().ToString();
  EXPECT_EQ(work->corrupt.size(), 1u);
  auto dead = (*reader)->MoveCorruptToDead(a, HookDestination(), kT0);
  ASSERT_FALSE(dead.has_value());
  EXPECT_EQ(dead.error().code(), Status::Code::kFailedPrecondition);
}

// Verifies that a listing by state skips an index entry whose record is gone, as a retention
// purge between the index read and the record read leaves it (a replay job once failed whole on
// "delivery ... not found"), and lists the deliveries around it.
TEST_F(RocksCorruptRecordTest, ListByStateSkipsARecordPurgedMeanwhile) {
  const std::string a = Enqueue(Numbered(1));
  const std::string gone = Enqueue(Numbered(2));
  const std::string c = Enqueue(Numbered(3));
  Close();
  {
    RawStore raw(options_.path);
    raw.Delete(Family::kJobs, gone);
  }
  Reopen();
  EXPECT_EQ(ListIds({.state = DeliveryState::kQueued, .limit = 10}),
            (std::vector<std::string>{a, c}));
}

}  // namespace
}  // namespace egress::storage
