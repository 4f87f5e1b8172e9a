// The QueueStore contract, BacklogByTenantPlatform: the per-destination counters summed by
// (tenant, platform), exact after every change and after a reopen.

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

NewDelivery Item(std::string tenant, std::string platform, std::string destination,
                 std::string credential) {
  NewDelivery d = Hook({.tenant = std::move(tenant)});
  d.platform = std::move(platform);
  d.destination = std::move(destination);
  d.credential = std::move(credential);
  return d;
}

const GroupCounts* Find(const std::vector<GroupCounts>& groups, std::string_view tenant,
                        std::string_view platform) {
  for (const GroupCounts& g : groups) {
    if (g.tenant == tenant && g.platform == platform) {
      return &g;
    }
  }
  return nullptr;
}

using QueueStoreBacklogByTenantPlatformTest = QueueStoreContractTest;

// Verifies that two destinations of one tenant and platform are summed, tenants and platforms
// stay apart, finished deliveries leave the counts, and a reopened store reads the same.
TEST_P(QueueStoreBacklogByTenantPlatformTest, SumsDestinationsAndSurvivesReopen) {
  std::vector<std::string> ids;
  for (const NewDelivery& d : {Item("acme", "webhook", "http://127.0.0.1:9/a", "hooks"),
                               Item("acme", "webhook", "http://127.0.0.1:9/a", "hooks"),
                               Item("acme", "webhook", "http://127.0.0.1:9/b", "hooks"),
                               Item("acme", "slack", "C0123456789", "bot"),
                               Item("beta", "webhook", "http://127.0.0.1:9/a", "hooks")}) {
    auto r = store_->Enqueue(d, kT0);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    ids.push_back(r->id);
  }
  StateChange lease{.to = DeliveryState::kInFlight, .at_ms = kT0 + 1};
  StateChange defer{.to = DeliveryState::kDeferred, .at_ms = kT0 + 2, .reason = "backoff"};
  StateChange deliver{.to = DeliveryState::kDelivered, .at_ms = kT0 + 2};
  ASSERT_TRUE(store_->ApplyBatch({{ids[0], lease}, {ids[2], lease}, {ids[3], lease}}));
  ASSERT_TRUE(store_->ApplyBatch({{ids[0], defer}, {ids[3], deliver}}));

  auto groups = store_->BacklogByTenantPlatform();
  ASSERT_TRUE(groups.has_value()) << groups.error().ToString();
  ASSERT_EQ(groups->size(), 2u) << "acme/slack has nothing waiting";
  const GroupCounts* acme = Find(*groups, "acme", "webhook");
  ASSERT_NE(acme, nullptr);
  EXPECT_EQ(CountOf(acme->counts, DeliveryState::kQueued), 1u);
  EXPECT_EQ(CountOf(acme->counts, DeliveryState::kInFlight), 1u);
  EXPECT_EQ(CountOf(acme->counts, DeliveryState::kDeferred), 1u);
  EXPECT_EQ(CountOf(acme->counts, DeliveryState::kDelivered), 0u);
  const GroupCounts* beta = Find(*groups, "beta", "webhook");
  ASSERT_NE(beta, nullptr);
  EXPECT_EQ(CountOf(beta->counts, DeliveryState::kQueued), 1u);
  EXPECT_EQ((*groups)[0].tenant, "acme");  // ordered by tenant
  // One tenant's part, by platform.
  auto own = store_->TenantBacklogByPlatform("acme");
  ASSERT_TRUE(own.has_value()) << own.error().ToString();
  ASSERT_EQ(own->size(), 1u);
  EXPECT_EQ((*own)[0].platform, "webhook");
  EXPECT_EQ((*own)[0].counts, acme->counts);
  EXPECT_EQ(store_->TenantBacklogByPlatform("beta")->size(), 1u);
  EXPECT_TRUE(store_->TenantBacklogByPlatform("nobody")->empty());
  ASSERT_TRUE(store_->Close().ok());

  Reopen();
  groups = store_->BacklogByTenantPlatform();
  ASSERT_TRUE(groups.has_value());
  acme = Find(*groups, "acme", "webhook");
  ASSERT_NE(acme, nullptr);
  // A lease is not durable: the in-flight delivery is queued again after the reopen.
  EXPECT_EQ(CountOf(acme->counts, DeliveryState::kQueued), 2u);
  EXPECT_EQ(CountOf(acme->counts, DeliveryState::kInFlight), 0u);
  EXPECT_EQ(CountOf(acme->counts, DeliveryState::kDeferred), 1u);
  ASSERT_NE(Find(*groups, "beta", "webhook"), nullptr);
  EXPECT_EQ(Find(*groups, "acme", "slack"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreBacklogByTenantPlatformTest,
                         ::testing::ValuesIn(ContractStoreKinds()), StoreKindName);

}  // namespace
}  // namespace egress::storage
