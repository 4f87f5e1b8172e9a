// The QueueStore contract, settings: the version that tells a node the settings changed
// (SettingsVersion), on one handle and between two handles of a store several nodes share.

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/storage/queue_store_contract.h"

namespace egress::storage {
namespace {

// A registered credential's key, as the service writes it: credentials/<tenant>\x1f<name>.
const std::string kCredentialKey = std::string("credentials/acme\x1f") + "late";

class QueueStoreSettingsTest : public QueueStoreContractTest {
 protected:
  // The version `store` reads (0 and a test failure when it fails).
  static uint64_t Version(QueueStore& store) {
    auto v = store.SettingsVersion();
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : 0;
  }
};

// Verifies that the version grows with every PutSetting (a new value, the same value again and
// a delete alike) and with nothing else: listing settings and writing deliveries leave it.
TEST_P(QueueStoreSettingsTest, VersionGrowsWithEveryPutSettingOnly) {
  const uint64_t v0 = Version(*store_);
  ASSERT_TRUE(store_->PutSetting("quotas/acme", R"({"monthly":{"limit":5,"window":"30d"}})").ok());
  const uint64_t v1 = Version(*store_);
  EXPECT_GT(v1, v0);
  ASSERT_TRUE(store_->PutSetting("quotas/acme", R"({"monthly":{"limit":5,"window":"30d"}})").ok());
  const uint64_t v2 = Version(*store_);
  EXPECT_GT(v2, v1);
  ASSERT_TRUE(store_->PutSetting("quotas/acme", "").ok());
  const uint64_t v3 = Version(*store_);
  EXPECT_GT(v3, v2);

  ASSERT_TRUE(store_->ListSettings("quotas/"));
  const std::string id = Enqueue(Hook({.key = "k1"}));
  Apply(id, StateChange{.to = DeliveryState::kCancelled, .at_ms = kT0 + 1});
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(store_->LeaseDue(kT0 + 2, 10)->size(), 0u);
  EXPECT_EQ(Version(*store_), v3);
}

// Verifies that a closed store refuses the version with FailedPrecondition, as every read.
TEST_P(QueueStoreSettingsTest, ClosedStoreRefusesTheVersion) {
  ASSERT_TRUE(store_->Close().ok());
  auto v = store_->SettingsVersion();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code(), Status::Code::kFailedPrecondition) << v.error().ToString();
}

// Verifies that two handles on one store (two nodes) see each other's setting changes through
// the version and ListSettings, in both directions and deletes included, and that writers on
// both at once each move the version (none is lost). A store one process opens alone (RocksDB)
// refuses the second handle with Busy: there, the one handle's version is all there is.
TEST_P(QueueStoreSettingsTest, HandlesOfOneStoreShareTheVersion) {
  auto peer = site_->OpenPeer(options_, kT0);
  if (!peer) {
    EXPECT_EQ(peer.error().code(), Status::Code::kBusy) << peer.error().ToString();
    return;
  }
  QueueStore& other = **peer;
  const uint64_t v0 = Version(*store_);
  EXPECT_EQ(Version(other), v0);

  const std::string credential = R"({"platform":"webhook","secrets":["whsec_x"]})";
  ASSERT_TRUE(other.PutSetting(kCredentialKey, credential).ok());
  const uint64_t v1 = Version(*store_);
  EXPECT_GT(v1, v0);
  EXPECT_EQ(Version(other), v1);
  auto listed = store_->ListSettings("credentials/");
  ASSERT_TRUE(listed) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].first, kCredentialKey);
  EXPECT_EQ((*listed)[0].second, credential);

  ASSERT_TRUE(store_->PutSetting(kCredentialKey, "").ok());
  const uint64_t v2 = Version(other);
  EXPECT_GT(v2, v1);
  auto gone = other.ListSettings("credentials/");
  ASSERT_TRUE(gone) << gone.error().ToString();
  EXPECT_TRUE(gone->empty());

  constexpr int kWrites = 20;
  auto write = [](QueueStore& store, const std::string& tenant) {
    for (int i = 0; i < kWrites; ++i) {
      EXPECT_TRUE(
          store.PutSetting("overrides/" + tenant, R"({"n":)" + std::to_string(i) + "}").ok());
    }
  };
  std::thread a([&] { write(*store_, "acme"); });
  std::thread b([&] { write(other, "globex"); });
  a.join();
  b.join();
  EXPECT_GE(Version(*store_), v2 + 2 * kWrites);
  EXPECT_EQ(Version(other), Version(*store_));
  EXPECT_EQ(other.ListSettings("overrides/")->size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Contract, QueueStoreSettingsTest,
                         ::testing::ValuesIn(ContractStoreKinds()), StoreKindName);

}  // namespace
}  // namespace egress::storage
