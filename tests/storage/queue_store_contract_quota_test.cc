// The QueueStore contract, quota charges (docs/storage.md, "Quotas"): charged with the enqueue,
// given back when a delivery ends dead or cancelled, charged again by a replay, corrected by an
// actual cost, each exactly once and durable across a reopen.

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "dispatcher/pacing/sliding_window_counter.h"
#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

const pacing::WindowShape kShape = pacing::WindowShape::Of(10'000);

NewDelivery Charged(std::string idem, uint32_t cost, int64_t now_ms) {
  NewDelivery d;
  d.tenant = "acme";
  d.platform = "line";
  d.destination = "U1";
  d.credential = "bot";
  d.payload = R"({"messages":[]})";
  d.idempotency_key = std::move(idem);
  d.cost = cost;
  d.charges.push_back(QuotaCharge{"monthly", kShape.window_ms, kShape.slice_ms,
                                  kShape.ExpiryOf(now_ms), static_cast<int64_t>(cost)});
  return d;
}

class QueueStoreQuotaTest : public QueueStoreContractTest {
 protected:
  int64_t Used(int64_t now_ms) {
    return store_->QuotaUsage("acme", "monthly", now_ms).Used(now_ms);
  }
  void Move(const std::string& id, DeliveryState to, int64_t at_ms,
            std::optional<int64_t> actual = std::nullopt) {
    StateChange c{.to = to, .at_ms = at_ms, .reason = to == DeliveryState::kDead ? "http_404" : ""};
    c.actual_cost = actual;
    Apply(id, c);
  }
};

// Verifies that an enqueue charges its units, a repeat of its idempotency key charges nothing,
// and the count survives a reopen.
TEST_P(QueueStoreQuotaTest, EnqueueChargesOnceAndSurvivesReopen) {
  Enqueue(Charged("a", 3, kT0), kT0);
  Enqueue(Charged("a", 3, kT0), kT0);
  Enqueue(Charged("b", 2, kT0), kT0);
  EXPECT_EQ(Used(kT0), 5);
  Reopen();
  EXPECT_EQ(Used(kT0), 5);
  // The slice leaves the window after window + slice at most.
  EXPECT_EQ(Used(kT0 + 10'000 + kShape.slice_ms), 0);
}

// Verifies that dead and cancelled deliveries are refunded exactly once across a reopen, that a
// replay charges again only what was refunded, and that an actual cost corrects the charge.
TEST_P(QueueStoreQuotaTest, RefundsExactlyOnceAcrossReopenAndReplay) {
  const std::string dead = Enqueue(Charged("dead", 4, kT0), kT0);
  const std::string cancelled = Enqueue(Charged("cancel", 2, kT0), kT0);
  const std::string corrected = Enqueue(Charged("multicast", 5, kT0), kT0);
  ASSERT_EQ(Used(kT0), 11);
  // A lease and its outcome: the lease moves nothing.
  auto leased = store_->LeaseDue(kT0 + 1, 10);
  ASSERT_TRUE(leased.has_value());
  EXPECT_EQ(Used(kT0 + 1), 11);
  Move(dead, DeliveryState::kDead, kT0 + 2);
  Move(corrected, DeliveryState::kDelivered, kT0 + 2, 3);
  EXPECT_EQ(Used(kT0 + 2), 2 + 3);
  Reopen();
  EXPECT_EQ(Used(kT0 + 3), 5);
  Move(cancelled, DeliveryState::kCancelled, kT0 + 3);
  EXPECT_EQ(Used(kT0 + 3), 3);
  // A second cancel or death is refused by the state machine, so nothing is refunded twice.
  EXPECT_FALSE(store_->Apply(cancelled, {.to = DeliveryState::kCancelled, .at_ms = kT0 + 4}));
  Reopen();
  EXPECT_EQ(Used(kT0 + 4), 3);
  // A replay charges the dead one again, in the slice of the replay's time.
  Move(dead, DeliveryState::kQueued, kT0 + 5'000);
  EXPECT_EQ(Used(kT0 + 5'000), 7);
  auto replayed = store_->Get(dead);
  ASSERT_TRUE(replayed.has_value());
  EXPECT_EQ(replayed->charges.at(0).expires_ms, kShape.ExpiryOf(kT0 + 5'000));
  Reopen();
  EXPECT_EQ(Used(kT0 + 5'000), 7);
  // After the first slice left, only the replayed charge counts.
  EXPECT_EQ(Used(kShape.ExpiryOf(kT0)), 4);
  // Dying after its first slice left refunds only the slice still counting (the replay's).
  Move(dead, DeliveryState::kDead, kShape.ExpiryOf(kT0) + 1);
  EXPECT_EQ(Used(kShape.ExpiryOf(kT0) + 1), 0);
}

// Verifies that a refund written after its slice stopped counting changes nothing, and that the
// purge prunes slices long gone from the disk.
TEST_P(QueueStoreQuotaTest, ExpiredSlicesAreNotRefundedAndArePruned) {
  const std::string id = Enqueue(Charged("late", 2, kT0), kT0);
  const int64_t gone = kShape.ExpiryOf(kT0);
  StateChange cancel{.to = DeliveryState::kCancelled, .at_ms = gone};
  ASSERT_TRUE(store_->Apply(id, cancel).has_value());
  EXPECT_EQ(Used(gone - 1), 2);  // the slice as it was: nothing taken from it
  RetentionPolicy keep_all{0, 0, 0, 0};
  auto purged = store_->PurgeExpired(keep_all, gone + 2 * 3'600'000, 100);
  ASSERT_TRUE(purged.has_value()) << purged.error().ToString();
  Reopen();
  EXPECT_EQ(Used(gone - 1), 0);
}

// Verifies that hostile charges are refused with a typed error naming the field.
TEST_P(QueueStoreQuotaTest, RefusesMalformedCharges) {
  NewDelivery d = Charged("x", 1, kT0);
  d.charges[0].units = -1;
  auto r = store_->Enqueue(d, kT0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Status::Code::kInvalidArgument);
  d = Charged("y", 1, kT0);
  d.charges[0].quota = "bad\x01name";
  auto batch = store_->EnqueueBatch({d}, kT0);
  ASSERT_TRUE(batch.has_value());
  ASSERT_FALSE(batch->front().has_value());
  EXPECT_NE(batch->front().error().message().find("charges.quota"), std::string::npos);
  EXPECT_EQ(Used(kT0), 0);
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreQuotaTest, ::testing::ValuesIn(ContractStoreKinds()),
                         StoreKindName);

}  // namespace
}  // namespace egress::storage
