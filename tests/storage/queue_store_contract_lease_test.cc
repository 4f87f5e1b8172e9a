// The QueueStore contract, leases: a move to in_flight is not durable; readers see it, the next
// change writes the move from what the store holds, and a crash finds the delivery waiting.

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

const StateChange kLease{.to = DeliveryState::kInFlight, .at_ms = kT0 + 1};
const StateChange kDeliver{.to = DeliveryState::kDelivered, .at_ms = kT0 + 2};

// Four webhook deliveries queued at kT0 (ids_), all to one destination (dest_).
class QueueStoreLeaseTest : public QueueStoreContractTest {
 protected:
  void SetUp() override {
    QueueStoreContractTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    for (int i = 0; i < 4; ++i) {
      const std::string id = Enqueue(Hook());
      ASSERT_FALSE(id.empty());
      ids_.push_back(id);
    }
    dest_ = DestinationKeyOf(*store_->Get(ids_[0]));
  }

  // The ids List returns for `f`, in pages of two, so that every listing crosses the cursor.
  std::vector<std::string> ListIds(ListFilter f) {
    f.limit = 2;
    return QueueStoreContractTest::ListIds(f);
  }

  // Every view agrees with Get: counts with a scan, each state's list, the destination's work.
  void ExpectConsistent() {
    auto counts = store_->Counts();
    auto scanned = store_->ScanCounts();
    ASSERT_TRUE(counts && scanned);
    EXPECT_EQ(*counts, *scanned);
    std::vector<std::string> pending;
    for (DeliveryState state : kAllStates) {
      std::vector<std::string> want;
      for (const std::string& id : ids_) {
        if (StateOf(id) == state) {
          want.push_back(id);
        }
      }
      EXPECT_EQ(ListIds({.state = state}), want) << StateName(state);
      EXPECT_EQ(CountOf(*counts, state), want.size()) << StateName(state);
      if (!IsTerminal(state)) {
        pending.insert(pending.end(), want.begin(), want.end());
      }
    }
    std::sort(pending.begin(), pending.end());
    auto work = store_->PendingFor(dest_, "", 100);
    ASSERT_TRUE(work);
    std::vector<std::string> got;
    for (const Delivery& d : work->deliveries) {
      got.push_back(d.id);
      EXPECT_EQ(d.state, StateOf(d.id));
    }
    EXPECT_EQ(got, pending);
    EXPECT_EQ(*store_->TenantBacklog("acme"), pending.size());
    auto dest_counts = store_->DestinationCounts({dest_});
    ASSERT_TRUE(dest_counts);
    for (DeliveryState state :
         {DeliveryState::kQueued, DeliveryState::kInFlight, DeliveryState::kDeferred}) {
      EXPECT_EQ(CountOf((*dest_counts)[0], state), CountOf(*counts, state)) << StateName(state);
    }
  }

  std::vector<std::string> ids_;
  std::string dest_;
};

// Verifies that leases by Apply, ApplyBatch and LeaseDue write nothing, and that every read
// sees them in_flight.
TEST_P(QueueStoreLeaseTest, LeaseWritesNothingAndReadsSeeIt) {
  const uint64_t writes = Writes();
  auto one = store_->Apply(ids_[0], kLease);
  ASSERT_TRUE(one) << one.error().ToString();
  EXPECT_EQ(one->state, DeliveryState::kInFlight);
  auto batch = store_->ApplyBatch({{ids_[1], kLease}});
  ASSERT_TRUE(batch && (*batch)[0]);
  auto due = store_->LeaseDue(kT0 + 5, 10);
  ASSERT_TRUE(due) << due.error().ToString();
  ASSERT_EQ(due->size(), 2u) << "leased ones are not leased again";
  EXPECT_EQ((*due)[0].id, ids_[2]);
  EXPECT_EQ(Writes(), writes);

  EXPECT_EQ(StateOf(ids_[0]), DeliveryState::kInFlight);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kInFlight), 4u);
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kQueued), 0u);
  EXPECT_TRUE(ListIds({.state = DeliveryState::kQueued}).empty());
  EXPECT_EQ(ListIds({.state = DeliveryState::kInFlight}), ids_);
  EXPECT_TRUE(ListIds({.state = DeliveryState::kInFlight, .tenant = "other"}).empty());
  auto all = store_->List({});
  ASSERT_TRUE(all);
  for (const Delivery& d : all->deliveries) {
    EXPECT_EQ(d.state, DeliveryState::kInFlight);
  }
  EXPECT_TRUE(store_->LeaseDue(kT0 + 5, 10)->empty());
  ExpectConsistent();
}

// Verifies that outcomes after leases write the right index entries, seen both before and
// after reopening.
TEST_P(QueueStoreLeaseTest, OutcomeWritesFromTheDiskVersion) {
  ASSERT_TRUE(store_->LeaseDue(kT0 + 5, 3));
  const uint64_t writes = Writes();
  const StateChange defer{.to = DeliveryState::kDeferred,
                          .at_ms = kT0 + 2,
                          .next_attempt_ms = kT0 + 60'000,
                          .reason = "backoff"};
  const StateChange requeue{.to = DeliveryState::kQueued, .at_ms = kT0 + 2};
  const StateChange dead{.to = DeliveryState::kDead, .at_ms = kT0 + 2, .reason = "http_404"};
  auto r = store_->ApplyBatch({{ids_[0], kDeliver}, {ids_[1], defer}, {ids_[2], dead}});
  ASSERT_TRUE(r);
  for (const auto& d : *r) {
    ASSERT_TRUE(d) << d.error().ToString();
  }
  EXPECT_EQ(Writes(), writes + 1);
  EXPECT_EQ(StateOf(ids_[0]), DeliveryState::kDelivered);
  EXPECT_EQ(StateOf(ids_[1]), DeliveryState::kDeferred);
  EXPECT_EQ(StateOf(ids_[2]), DeliveryState::kDead);
  ExpectConsistent();

  // The due index: the deferred one is not due before its time, then it is, and leasing it
  // again and requeueing it moves it off the deferred entries.
  EXPECT_EQ(store_->LeaseDue(kT0 + 5, 10)->size(), 1u);  // ids_[3]
  auto later = store_->LeaseDue(kT0 + 60'000, 10);
  ASSERT_TRUE(later && later->size() == 1u);
  EXPECT_EQ((*later)[0].id, ids_[1]);
  ASSERT_TRUE(store_->Apply(ids_[1], requeue));
  ExpectConsistent();
  Reopen(kT0 + 70'000);
  EXPECT_EQ(StateOf(ids_[1]), DeliveryState::kQueued);
  EXPECT_EQ(StateOf(ids_[3]), DeliveryState::kQueued) << "its lease died with the store";
  ExpectConsistent();
  // The done index: the delivered one ages out.
  const RetentionPolicy policy;
  EXPECT_EQ(store_->PurgeExpired(policy, kT0 + policy.delivered_ms + 10, 10)->delivered, 1u);
}

// Verifies that a leased delivery can be neither cancelled nor purged.
TEST_P(QueueStoreLeaseTest, CancelOfALeasedOneFails) {
  ASSERT_TRUE(store_->Apply(ids_[0], kLease));
  const uint64_t writes = Writes();
  auto cancel = store_->Apply(ids_[0], {.to = DeliveryState::kCancelled, .at_ms = kT0 + 2});
  ASSERT_FALSE(cancel);
  EXPECT_EQ(cancel.error().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(cancel.error().message().find("in_flight"), std::string::npos)
      << cancel.error().message();
  Status purge = store_->Purge(ids_[0]);
  EXPECT_EQ(purge.code(), Status::Code::kFailedPrecondition) << purge.ToString();
  EXPECT_EQ(Writes(), writes);
  EXPECT_EQ(StateOf(ids_[0]), DeliveryState::kInFlight);
  ExpectConsistent();
}

// Verifies that a lease lost with the process leaves the delivery queued and due again.
TEST_P(QueueStoreLeaseTest, ReopenAfterALeaseFindsItQueued) {
  ASSERT_TRUE(store_->Apply(ids_[0], kLease));
  const StateChange defer{.to = DeliveryState::kDeferred,
                          .at_ms = kT0 + 2,
                          .next_attempt_ms = kT0 + 10,
                          .reason = "retry_after"};
  ASSERT_TRUE(store_->Apply(ids_[1], defer));
  ASSERT_TRUE(store_->ApplyBatch({{ids_[1], {.to = DeliveryState::kInFlight, .at_ms = kT0 + 20}}}));
  Reopen(kT0 + 1000);
  EXPECT_EQ(StateOf(ids_[0]), DeliveryState::kQueued);
  EXPECT_EQ(StateOf(ids_[1]), DeliveryState::kDeferred);
  ExpectConsistent();
  auto due = store_->LeaseDue(kT0 + 1000, 10);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->size(), 4u);
}

// Verifies a lease and its outcome in one batch: one write, and the outcome as if written
// from the queued record.
TEST_P(QueueStoreLeaseTest, LeaseAndOutcomeInOneBatch) {
  const uint64_t writes = Writes();
  auto r = store_->ApplyBatch({{ids_[0], kLease},
                               {ids_[1], kLease},
                               {ids_[0], kDeliver},
                               {ids_[2], kLease},
                               {ids_[2], {.to = DeliveryState::kQueued, .at_ms = kT0 + 3}},
                               {ids_[2], kLease}});
  ASSERT_TRUE(r);
  for (const auto& d : *r) {
    ASSERT_TRUE(d) << d.error().ToString();
  }
  EXPECT_EQ((*r)[2]->state, DeliveryState::kDelivered);
  EXPECT_EQ(Writes(), writes + 1);
  EXPECT_EQ(StateOf(ids_[0]), DeliveryState::kDelivered);
  EXPECT_EQ(StateOf(ids_[1]), DeliveryState::kInFlight);
  EXPECT_EQ(StateOf(ids_[2]), DeliveryState::kInFlight);
  ExpectConsistent();
  // A batch of outcomes of leases made by earlier batches.
  ASSERT_TRUE(store_->ApplyBatch({{ids_[1], kDeliver}, {ids_[2], kDeliver}}));
  ExpectConsistent();
  Reopen(kT0 + 1000);
  EXPECT_EQ(StateOf(ids_[1]), DeliveryState::kDelivered);
  ExpectConsistent();
}

// Verifies that a failed change leaves a lease as it was, and that the list of leases pages
// with its cursor and filters.
TEST_P(QueueStoreLeaseTest, ListsLeasesByPage) {
  for (int i = 0; i < 3; ++i) {
    auto r = store_->Enqueue(Hook({.tenant = "beta"}), kT0 + 100);
    ASSERT_TRUE(r);
    ids_.push_back(r->id);
  }
  ASSERT_EQ(store_->LeaseDue(kT0 + 100, 100)->size(), 7u);
  auto bad = store_->ApplyBatch({{ids_[0], {.to = DeliveryState::kDead, .at_ms = kT0 + 2}}});
  ASSERT_TRUE(bad);
  EXPECT_EQ((*bad)[0].error().code(), Status::Code::kInvalidArgument);  // dead needs a reason
  EXPECT_EQ(ListIds({.state = DeliveryState::kInFlight}), ids_);
  EXPECT_EQ(ListIds({.state = DeliveryState::kInFlight, .tenant = "beta"}),
            std::vector<std::string>(ids_.begin() + 4, ids_.end()));
  EXPECT_EQ(ListIds({.state = DeliveryState::kInFlight, .since_ms = kT0 + 50}),
            std::vector<std::string>(ids_.begin() + 4, ids_.end()));
  EXPECT_EQ(ListIds({.state = DeliveryState::kInFlight, .until_ms = kT0 + 50}),
            std::vector<std::string>(ids_.begin(), ids_.begin() + 4));
}

// Verifies that readers running beside leases and outcomes always find each delivery, in a
// state it can be in, and that everything adds up once the writer is done.
TEST_P(QueueStoreLeaseTest, ReadersBesideLeasesAndOutcomes) {
  for (int i = 0; i < 60; ++i) {
    auto r = store_->Enqueue(Hook(), kT0);
    ASSERT_TRUE(r);
    ids_.push_back(r->id);
  }
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (size_t i = 0; i < ids_.size(); i += 2) {
      const size_t j = std::min(i + 1, ids_.size() - 1);
      EXPECT_TRUE(store_->ApplyBatch({{ids_[i], kLease}, {ids_[j], kLease}}));
      EXPECT_TRUE(store_->ApplyBatch({{ids_[i], kDeliver}}));
      EXPECT_TRUE(store_->ApplyBatch({{ids_[j], kDeliver}}));
    }
    done = true;
  });
  size_t rounds = 0;
  while (!done || rounds == 0) {
    ++rounds;
    for (const std::string& id : ids_) {
      auto d = store_->Get(id);
      ASSERT_TRUE(d) << d.error().ToString();
      EXPECT_TRUE(d->state == DeliveryState::kQueued || d->state == DeliveryState::kInFlight ||
                  d->state == DeliveryState::kDelivered)
          << StateName(d->state);
    }
    auto leased = store_->List({.state = DeliveryState::kInFlight, .limit = 1000});
    ASSERT_TRUE(leased);
    EXPECT_LE(leased->deliveries.size(), 2u);
    ASSERT_TRUE(store_->PendingFor(dest_, "", 1000));
  }
  writer.join();
  EXPECT_EQ(CountOf(*store_->Counts(), DeliveryState::kDelivered), ids_.size());
  ExpectConsistent();
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreLeaseTest, ::testing::ValuesIn(ContractStoreKinds()),
                         StoreKindName);

}  // namespace
}  // namespace egress::storage
