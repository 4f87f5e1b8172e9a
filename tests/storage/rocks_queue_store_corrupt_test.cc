// Records the RocksDB store cannot read (damaged on purpose through RawStore): PendingFor skips
// and reports them, MoveCorruptToDead takes them out of their destination's way with every
// index and counter kept right (docs/storage.md, "Faults").

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/rocks_queue_store.h"
#include "tests/support/raw_store.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {
namespace {

constexpr int64_t kT0 = 1'767'225'600'000;
constexpr char kHook[] = "http://127.0.0.1:9/hook";

class CorruptRecordTest : public ::testing::Test {
 protected:
  CorruptRecordTest() { options_.path = dir_.Sub("store"); }

  void Open() {
    auto store = OpenRocksQueueStore(options_, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    store_ = std::move(*store);
  }
  void Close() {
    ASSERT_TRUE(store_->Close().ok());
    store_.reset();
  }

  std::string Enqueue(int n) {
    NewDelivery d{.tenant = "acme",
                  .platform = "webhook",
                  .destination = kHook,
                  .credential = "hooks",
                  .payload = R"({"n":)" + std::to_string(n) + "}",
                  .idempotency_key = "key-" + std::to_string(n)};
    auto r = store_->Enqueue(d, kT0);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? r->id : std::string();
  }

  static std::string Dest() { return DestinationKeyOf("webhook", "acme", "hooks", kHook); }

  std::vector<std::string> Ids(const DestinationWork& work) {
    std::vector<std::string> ids;
    for (const Delivery& d : work.deliveries) {
      ids.push_back(d.id);
    }
    return ids;
  }

  // The counters agree with a scan of every record.
  void ExpectCountsMatchScan() {
    auto counts = store_->Counts();
    auto scanned = store_->ScanCounts();
    ASSERT_TRUE(counts.has_value()) << counts.error().ToString();
    ASSERT_TRUE(scanned.has_value()) << scanned.error().ToString();
    EXPECT_EQ(*counts, *scanned);
  }

  TempDir dir_;
  StoreOptions options_;
  std::unique_ptr<QueueStore> store_;
};

// Verifies that a deferred record whose bytes were cut short inside a field is reported (not an
// error of the read), that the deliveries around it are read, and that MoveCorruptToDead makes it
// dead with reason corrupt_record and the raw bytes as payload, drops its state, destination and
// due entries and counts, and refuses a second repair.
TEST_F(CorruptRecordTest, TruncatedRecordIsReportedThenMovedToDead) {
  Open();
  const std::string a = Enqueue(1);
  const std::string bad = Enqueue(2);
  const std::string c = Enqueue(3);
  ASSERT_TRUE(store_->Apply(bad, {.to = DeliveryState::kDeferred,
                                  .at_ms = kT0,
                                  .next_attempt_ms = kT0 + 60'000,
                                  .reason = "backoff"}));
  Close();
  std::string damaged;
  {
    RawStore raw(options_.path);
    damaged = raw.Get(Family::kJobs, bad);
    damaged.resize(damaged.size() - 2);  // inside the last field (a cut between fields reads)
    raw.Put(Family::kJobs, bad, damaged);
  }
  Open();
  auto work = store_->PendingFor(Dest(), "", 10);
  ASSERT_TRUE(work.has_value()) << work.error().ToString();
  EXPECT_EQ(Ids(*work), (std::vector<std::string>{a, c}));
  ASSERT_EQ(work->corrupt.size(), 1u);
  EXPECT_EQ(work->corrupt[0].id, bad);
  EXPECT_EQ(work->corrupt[0].error, "delivery record is truncated or has a malformed field");
  // The limit counts the corrupt record: two entries reach the second delivery only.
  auto two = store_->PendingFor(Dest(), "", 2);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(Ids(*two), std::vector<std::string>{a});
  EXPECT_EQ(two->corrupt.size(), 1u);

  auto dead = store_->MoveCorruptToDead(bad, Dest(), kT0 + 5);
  ASSERT_TRUE(dead.has_value()) << dead.error().ToString();
  EXPECT_EQ(dead->state, DeliveryState::kDead);
  EXPECT_EQ(dead->reason, "corrupt_record: delivery record is truncated or has a malformed field");
  EXPECT_EQ(dead->payload, damaged);
  EXPECT_EQ(dead->tenant, "acme");
  EXPECT_EQ(dead->destination, kHook);
  EXPECT_EQ(dead->finished_ms, kT0 + 5);
  EXPECT_EQ(store_->Get(bad)->state, DeliveryState::kDead);
  work = store_->PendingFor(Dest(), "", 10);
  ASSERT_TRUE(work.has_value());
  EXPECT_EQ(Ids(*work), (std::vector<std::string>{a, c}));
  EXPECT_TRUE(work->corrupt.empty());
  auto counts = store_->Counts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDeferred), 0u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kQueued), 2u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDead), 1u);
  EXPECT_EQ(*store_->TenantBacklog("acme"), 2u);
  auto per_dest = store_->DestinationCounts({Dest()});
  ASSERT_TRUE(per_dest.has_value());
  EXPECT_EQ(CountOf((*per_dest)[0], DeliveryState::kDeferred), 0u);
  ExpectCountsMatchScan();
  auto again = store_->MoveCorruptToDead(bad, Dest(), kT0 + 6);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), Status::Code::kNotFound) << again.error().ToString();
  auto good = store_->MoveCorruptToDead(a, Dest(), kT0 + 6);
  ASSERT_FALSE(good.has_value());
  EXPECT_EQ(good.error().code(), Status::Code::kFailedPrecondition) << good.error().ToString();
  Close();
  RawStore raw(options_.path);
  EXPECT_TRUE(raw.Keys(Family::kDue).empty());
  EXPECT_EQ(raw.Keys(Family::kDest).size(), 2u);
}

// Verifies that a destination index entry with no record behind it, a record that decodes but
// holds another id, and one cut between two fields (it decodes, without its destination) are
// all reported and repaired, and that the repaired ones list as dead.
TEST_F(CorruptRecordTest, MissingAndForeignRecordsAreReportedThenMovedToDead) {
  Open();
  const std::string a = Enqueue(1);
  const std::string b = Enqueue(2);
  const std::string cut = Enqueue(3);
  Close();
  const std::string ghost = "01KZZZZZZZZZZZZZZZZZZZZZZZ";
  {
    RawStore raw(options_.path);
    raw.Put(Family::kDest, DestIndexKey(Dest(), ghost), "");
    raw.Put(Family::kJobs, b, raw.Get(Family::kJobs, a));  // a's bytes under b's key
    Delivery first_fields{.id = cut, .tenant = "acme", .platform = "webhook"};
    std::string bytes = EncodeDelivery(first_fields);
    bytes.resize(bytes.find(std::string("\x04\x00", 2)));  // up to the empty destination
    raw.Put(Family::kJobs, cut, bytes);
  }
  Open();
  auto work = store_->PendingFor(Dest(), "", 10);
  ASSERT_TRUE(work.has_value()) << work.error().ToString();
  EXPECT_EQ(Ids(*work), std::vector<std::string>{a});
  ASSERT_EQ(work->corrupt.size(), 3u);
  EXPECT_EQ(work->corrupt[0].id, b);
  EXPECT_EQ(work->corrupt[0].error, "record holds another id");
  EXPECT_EQ(work->corrupt[1].id, cut);
  EXPECT_EQ(work->corrupt[1].error, "record belongs to another destination");
  EXPECT_EQ(work->corrupt[2].id, ghost);
  EXPECT_EQ(work->corrupt[2].error, "no record behind its index entry");
  for (const CorruptRecord& r : work->corrupt) {
    auto dead = store_->MoveCorruptToDead(r.id, Dest(), kT0 + 5);
    ASSERT_TRUE(dead.has_value()) << dead.error().ToString();
    EXPECT_EQ(dead->reason, "corrupt_record: " + r.error);
  }
  work = store_->PendingFor(Dest(), "", 10);
  ASSERT_TRUE(work.has_value());
  EXPECT_EQ(Ids(*work), std::vector<std::string>{a});
  EXPECT_TRUE(work->corrupt.empty());
  auto dead = store_->List({.state = DeliveryState::kDead, .reason_prefix = "corrupt_record"});
  ASSERT_TRUE(dead.has_value()) << dead.error().ToString();
  EXPECT_EQ(dead->deliveries.size(), 3u);
  ExpectCountsMatchScan();
}

// Verifies that a store opened read-only cannot repair (it writes nothing).
TEST_F(CorruptRecordTest, ReadOnlyStoreDoesNotRepair) {
  Open();
  const std::string a = Enqueue(1);
  Close();
  {
    RawStore raw(options_.path);
    raw.Put(Family::kJobs, a, "\x01garbage");
  }
  auto reader = OpenRocksQueueStoreReadOnly(options_);
  ASSERT_TRUE(reader.has_value()) << reader.error().ToString();
  auto work = (*reader)->PendingFor(Dest(), "", 10);
  ASSERT_TRUE(work.has_value()) << work.error().ToString();
  EXPECT_EQ(work->corrupt.size(), 1u);
  auto dead = (*reader)->MoveCorruptToDead(a, Dest(), kT0);
  ASSERT_FALSE(dead.has_value());
  EXPECT_EQ(dead.error().code(), Status::Code::kFailedPrecondition);
}

// Verifies that a listing by state skips an index entry whose record is gone, as a retention
// purge between the index read and the record read leaves it (a replay job once failed whole on
// "delivery ... not found"), and lists the deliveries around it.
TEST_F(CorruptRecordTest, ListByStateSkipsARecordPurgedMeanwhile) {
  Open();
  const std::string a = Enqueue(1);
  const std::string gone = Enqueue(2);
  const std::string c = Enqueue(3);
  Close();
  {
    RawStore raw(options_.path);
    raw.Delete(Family::kJobs, gone);
  }
  Open();
  ListFilter filter;
  filter.state = DeliveryState::kQueued;
  filter.limit = 10;
  auto page = store_->List(filter);
  ASSERT_TRUE(page.has_value()) << page.error().ToString();
  std::vector<std::string> ids;
  for (const Delivery& d : page->deliveries) {
    ids.push_back(d.id);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{a, c}));
}

}  // namespace
}  // namespace egress::storage
