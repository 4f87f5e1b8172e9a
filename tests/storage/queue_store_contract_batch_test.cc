// The QueueStore contract, ApplyBatch: many state changes in one write, each checked on its own.

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

// Three webhook deliveries queued at kT0, in ids_.
class QueueStoreApplyBatchTest : public QueueStoreContractTest {
 protected:
  void SetUp() override {
    QueueStoreContractTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    for (int i = 0; i < 3; ++i) {
      ids_.push_back(Enqueue(Hook()));
    }
  }

  std::vector<std::string> ids_;
};

// Verifies that each change of a batch is applied or refused on its own, with its own error.
TEST_P(QueueStoreApplyBatchTest, AppliesEachChangeAndReportsEachError) {
  StateChange lease{.to = DeliveryState::kInFlight, .at_ms = kT0 + 1};
  StateChange deliver{.to = DeliveryState::kDelivered, .at_ms = kT0 + 2};
  auto r = store_->ApplyBatch({{ids_[0], lease},
                               {"01ZZZZZZZZZZZZZZZZZZZZZZZZ", lease},
                               {ids_[1], deliver},  // queued -> delivered is not a transition
                               {ids_[2], lease}});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 4u);
  ASSERT_TRUE((*r)[0].has_value());
  EXPECT_EQ((*r)[0]->state, DeliveryState::kInFlight);
  EXPECT_EQ((*r)[1].error().code(), Status::Code::kNotFound);
  EXPECT_EQ((*r)[2].error().code(), Status::Code::kFailedPrecondition);
  ASSERT_TRUE((*r)[3].has_value());

  auto counts = store_->Counts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(CountOf(*counts, DeliveryState::kInFlight), 2u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kQueued), 1u);
  ExpectCountsMatchScan();
}

// Verifies that a later change of an id in the same batch sees the earlier one.
TEST_P(QueueStoreApplyBatchTest, LaterChangeOfTheSameIdSeesTheEarlierOne) {
  StateChange lease{.to = DeliveryState::kInFlight, .at_ms = kT0 + 1};
  StateChange deliver{.to = DeliveryState::kDelivered, .at_ms = kT0 + 2};
  StateChange again{.to = DeliveryState::kInFlight, .at_ms = kT0 + 3};
  auto r = store_->ApplyBatch({{ids_[0], lease}, {ids_[0], deliver}, {ids_[0], again}});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE((*r)[0].has_value());
  ASSERT_TRUE((*r)[1].has_value());
  EXPECT_EQ((*r)[1]->state, DeliveryState::kDelivered);
  EXPECT_EQ((*r)[2].error().code(), Status::Code::kFailedPrecondition);  // delivered is final

  auto stored = store_->Get(ids_[0]);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->state, DeliveryState::kDelivered);
  ExpectCountsMatchScan();
  auto pending = store_->PendingFor(DestinationKeyOf(*stored), "", 10);
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->deliveries.size(), 2u);  // the two still queued
}

// Verifies that the per-destination counts follow the changes of batches, terminal ones read 0,
// and an unknown destination reads all 0.
TEST_P(QueueStoreApplyBatchTest, DestinationCountsFollowEveryChange) {
  const std::string key = DestinationKeyOf(*store_->Get(ids_[0]));
  StateChange lease{.to = DeliveryState::kInFlight, .at_ms = kT0 + 1};
  StateChange defer{.to = DeliveryState::kDeferred, .at_ms = kT0 + 2, .reason = "backoff"};
  StateChange deliver{.to = DeliveryState::kDelivered, .at_ms = kT0 + 2};
  ASSERT_TRUE(store_->ApplyBatch({{ids_[0], lease}, {ids_[1], lease}}).has_value());
  ASSERT_TRUE(store_->ApplyBatch({{ids_[0], defer}, {ids_[1], deliver}}).has_value());
  auto counts = store_->DestinationCounts({key, "webhook\x1fnobody"});
  ASSERT_TRUE(counts.has_value()) << counts.error().ToString();
  ASSERT_EQ(counts->size(), 2u);
  EXPECT_EQ(CountOf((*counts)[0], DeliveryState::kQueued), 1u);
  EXPECT_EQ(CountOf((*counts)[0], DeliveryState::kDeferred), 1u);
  EXPECT_EQ(CountOf((*counts)[0], DeliveryState::kInFlight), 0u);
  EXPECT_EQ(CountOf((*counts)[0], DeliveryState::kDelivered), 0u) << "terminal states read 0";
  EXPECT_EQ((*counts)[1], StateCounts{});
}

// Verifies the service's pattern on the storage pool: two writers' batches (leases, outcomes),
// intake and counter reads at once. The counters stay exact, and ThreadSanitizer
// (`./dev test --tsan`) checks the store's in-memory state.
TEST_P(QueueStoreApplyBatchTest, ConcurrentBatchesIntakeAndReadsKeepCountersExact) {
  std::vector<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    const std::string id = Enqueue(Hook());
    ASSERT_FALSE(id.empty());
    ids.push_back(id);
  }
  const std::string key = DestinationKeyOf(*store_->Get(ids[0]));
  auto writer = [&](size_t first) {
    StateChange lease{.to = DeliveryState::kInFlight, .at_ms = kT0 + 1};
    StateChange deliver{.to = DeliveryState::kDelivered, .at_ms = kT0 + 2};
    for (size_t i = first; i < ids.size(); i += 20) {
      std::vector<QueueStore::IdChange> leases, outcomes;
      for (size_t j = i; j < i + 10 && j < ids.size(); ++j) {
        leases.emplace_back(ids[j], lease);
        outcomes.emplace_back(ids[j], deliver);
      }
      EXPECT_TRUE(store_->ApplyBatch(leases).has_value());
      EXPECT_TRUE(store_->ApplyBatch(outcomes).has_value());
    }
  };
  std::thread a(writer, 0);
  std::thread b(writer, 10);
  std::thread intake([&] {
    for (int i = 0; i < 50; ++i) {
      EXPECT_TRUE(store_->Enqueue(Hook(), kT0).has_value());
    }
  });
  std::thread reader([&] {
    for (int i = 0; i < 200; ++i) {
      EXPECT_TRUE(store_->Counts().has_value());
      EXPECT_TRUE(store_->DestinationCounts({key}).has_value());
      EXPECT_TRUE(store_->TenantBacklog("acme").has_value());
    }
  });
  for (std::thread* t : {&a, &b, &intake, &reader}) {
    t->join();
  }
  ExpectCountsMatchScan();
  auto counts = store_->Counts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDelivered), 200u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kQueued), 3u + 50u);
  EXPECT_EQ(*store_->TenantBacklog("acme"), 3u + 50u);
}

// Verifies that an empty batch commits no write.
TEST_P(QueueStoreApplyBatchTest, EmptyBatchWritesNothing) {
  const uint64_t writes = Writes();
  auto r = store_->ApplyBatch({});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(Writes(), writes);
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreApplyBatchTest,
                         ::testing::ValuesIn(ContractStoreKinds()), StoreKindName);

}  // namespace
}  // namespace egress::storage
