// The QueueStore contract, records the store cannot read (damaged on purpose at rest through the
// kind's StoreSite): PendingFor skips and reports them, MoveCorruptToDead takes them out of their
// destination's way with every counter kept right (docs/storage.md, "Faults").

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/delivery_codec.h"
#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

using QueueStoreCorruptRecordTest = QueueStoreContractTest;

// Verifies that a deferred record whose bytes were cut short inside a field is reported (not an
// error of the read), that the deliveries around it are read, and that MoveCorruptToDead makes it
// dead with reason corrupt_record and the raw bytes as payload, drops its waiting state and
// counts, and refuses a second repair.
TEST_P(QueueStoreCorruptRecordTest, TruncatedRecordIsReportedThenMovedToDead) {
  const std::string a = Enqueue(Numbered(1));
  const std::string bad = Enqueue(Numbered(2));
  const std::string c = Enqueue(Numbered(3));
  ASSERT_TRUE(store_->Apply(bad, {.to = DeliveryState::kDeferred,
                                  .at_ms = kT0,
                                  .next_attempt_ms = kT0 + 60'000,
                                  .reason = "backoff"}));
  Close();
  std::string damaged = site_->RecordAtRest(bad);
  ASSERT_GT(damaged.size(), 2u);
  damaged.resize(damaged.size() - 2);  // inside the last field (a cut between fields reads)
  site_->PutRecordAtRest(bad, damaged);
  Reopen();
  auto work = store_->PendingFor(HookDestination(), "", 10);
  ASSERT_TRUE(work.has_value()) << work.error().ToString();
  EXPECT_EQ(Ids(*work), (std::vector<std::string>{a, c}));
  ASSERT_EQ(work->corrupt.size(), 1u);
  EXPECT_EQ(work->corrupt[0].id, bad);
  EXPECT_EQ(work->corrupt[0].error, "delivery record is truncated or has a malformed field");
  // The limit counts the corrupt record: two entries reach the second delivery only.
  auto two = store_->PendingFor(HookDestination(), "", 2);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(Ids(*two), std::vector<std::string>{a});
  EXPECT_EQ(two->corrupt.size(), 1u);

  auto dead = store_->MoveCorruptToDead(bad, HookDestination(), kT0 + 5);
  ASSERT_TRUE(dead.has_value()) << dead.error().ToString();
  EXPECT_EQ(dead->state, DeliveryState::kDead);
  EXPECT_EQ(dead->reason, "corrupt_record: delivery record is truncated or has a malformed field");
  EXPECT_EQ(dead->payload, damaged);
  EXPECT_EQ(dead->tenant, "acme");
  EXPECT_EQ(dead->destination, kHookUrl);
  EXPECT_EQ(dead->finished_ms, kT0 + 5);
  EXPECT_EQ(store_->Get(bad)->state, DeliveryState::kDead);
  work = store_->PendingFor(HookDestination(), "", 10);
  ASSERT_TRUE(work.has_value());
  EXPECT_EQ(Ids(*work), (std::vector<std::string>{a, c}));
  EXPECT_TRUE(work->corrupt.empty());
  auto counts = store_->Counts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDeferred), 0u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kQueued), 2u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDead), 1u);
  EXPECT_EQ(*store_->TenantBacklog("acme"), 2u);
  auto per_dest = store_->DestinationCounts({HookDestination()});
  ASSERT_TRUE(per_dest.has_value());
  EXPECT_EQ(CountOf((*per_dest)[0], DeliveryState::kDeferred), 0u);
  ExpectCountsMatchScan();
  auto again = store_->MoveCorruptToDead(bad, HookDestination(), kT0 + 6);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), Status::Code::kNotFound) << again.error().ToString();
  auto good = store_->MoveCorruptToDead(a, HookDestination(), kT0 + 6);
  ASSERT_FALSE(good.has_value());
  EXPECT_EQ(good.error().code(), Status::Code::kFailedPrecondition) << good.error().ToString();
}

// Verifies that a record that decodes but holds another id, and one cut between two fields (it
// decodes, without its destination), are both reported and repaired, and that the repaired ones
// list as dead.
TEST_P(QueueStoreCorruptRecordTest, ForeignRecordsAreReportedThenMovedToDead) {
  const std::string a = Enqueue(Numbered(1));
  const std::string b = Enqueue(Numbered(2));
  const std::string cut = Enqueue(Numbered(3));
  Close();
  site_->PutRecordAtRest(b, site_->RecordAtRest(a));  // a's bytes as b's record
  Delivery first_fields{.id = cut, .tenant = "acme", .platform = "webhook"};
  std::string bytes = EncodeDelivery(first_fields);
  bytes.resize(bytes.find(std::string("\x04\x00", 2)));  // up to the empty destination
  site_->PutRecordAtRest(cut, bytes);
  Reopen();
  auto work = store_->PendingFor(HookDestination(), "", 10);
  ASSERT_TRUE(work.has_value()) << work.error().ToString();
  EXPECT_EQ(Ids(*work), std::vector<std::string>{a});
  ASSERT_EQ(work->corrupt.size(), 2u);
  EXPECT_EQ(work->corrupt[0].id, b);
  EXPECT_EQ(work->corrupt[0].error, "record holds another id");
  EXPECT_EQ(work->corrupt[1].id, cut);
  EXPECT_EQ(work->corrupt[1].error, "record belongs to another destination");
  for (const CorruptRecord& r : work->corrupt) {
    auto dead = store_->MoveCorruptToDead(r.id, HookDestination(), kT0 + 5);
    ASSERT_TRUE(dead.has_value()) << dead.error().ToString();
    EXPECT_EQ(dead->reason, "corrupt_record: " + r.error);
  }
  work = store_->PendingFor(HookDestination(), "", 10);
  ASSERT_TRUE(work.has_value());
  EXPECT_EQ(Ids(*work), std::vector<std::string>{a});
  EXPECT_TRUE(work->corrupt.empty());
  auto dead = store_->List({.state = DeliveryState::kDead, .reason_prefix = "corrupt_record"});
  ASSERT_TRUE(dead.has_value()) << dead.error().ToString();
  EXPECT_EQ(dead->deliveries.size(), 2u);
  ExpectCountsMatchScan();
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreCorruptRecordTest,
                         ::testing::ValuesIn(ContractStoreKinds()), StoreKindName);

}  // namespace
}  // namespace egress::storage
