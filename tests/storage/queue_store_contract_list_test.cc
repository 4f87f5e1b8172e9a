// The QueueStore contract, List by creation time: the since and until bounds with the cursor and
// the other filters.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

class QueueStoreListTest : public QueueStoreContractTest {
 protected:
  std::string Add(int64_t at_ms, std::string tenant = "acme") {
    return Enqueue(Hook({.tenant = std::move(tenant)}), at_ms);
  }
};

// Verifies since (inclusive) and until (exclusive) select by created_ms, with and without a state.
TEST_P(QueueStoreListTest, FiltersByCreationTime) {
  const std::string a = Add(kT0), b = Add(kT0 + 1000), c = Add(kT0 + 2000), d = Add(kT0 + 3000);
  using V = std::vector<std::string>;
  EXPECT_EQ(ListIds({.since_ms = kT0 + 1000}), (V{b, c, d}));
  EXPECT_EQ(ListIds({.until_ms = kT0 + 2000}), (V{a, b}));
  EXPECT_EQ(ListIds({.since_ms = kT0 + 500, .until_ms = kT0 + 2500}), (V{b, c}));
  EXPECT_EQ(ListIds({.state = DeliveryState::kQueued, .since_ms = kT0 + 2000}), (V{c, d}));
  EXPECT_TRUE(ListIds({.since_ms = kT0 + 2000, .until_ms = kT0 + 2000}).empty());
  EXPECT_TRUE(ListIds({.since_ms = kT0 + 9000}).empty());
}

// Verifies that a since bound combines with the cursor and other filters, page by page.
TEST_P(QueueStoreListTest, SinceWithCursorAndFilters) {
  std::vector<std::string> beta;
  for (int i = 0; i < 10; ++i) {
    Add(kT0 + i);
    beta.push_back(Add(kT0 + i, "beta"));
  }
  ListFilter f{.tenant = "beta", .since_ms = kT0 + 4, .limit = 2};
  auto first = store_->List(f);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->deliveries.size(), 2u);
  EXPECT_EQ(first->deliveries[0].id, beta[4]);
  EXPECT_EQ(ListIds(f), std::vector<std::string>(beta.begin() + 4, beta.end()));
  f.after_id = beta[7];  // a cursor past the since bound wins
  EXPECT_EQ(ListIds(f), std::vector<std::string>(beta.begin() + 8, beta.end()));
}

// Verifies that a delivery created after the wall clock stepped back (its id carries the later
// time) is still selected by its created_ms.
TEST_P(QueueStoreListTest, ClockStepBackKeepsCreatedTime) {
  Add(kT0 + 5000);
  const std::string stepped = Add(kT0 + 1000);
  EXPECT_EQ(ListIds({.since_ms = kT0 + 500, .until_ms = kT0 + 2000}),
            std::vector<std::string>{stepped});
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreListTest, ::testing::ValuesIn(ContractStoreKinds()),
                         StoreKindName);

}  // namespace
}  // namespace egress::storage
