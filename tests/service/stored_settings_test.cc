#include "dispatcher/service/stored_settings.h"

#include <gtest/gtest.h>

#include "adapters/api_key.h"
#include "tests/support/memory_queue_store.h"

namespace egress::service {
namespace {

using pacing::BudgetName;

constexpr char kToken[] = "xoxb-secret-token-value";

// Verifies that every prefix is read and parsed into its tenant's entry (the credential's tenant
// and name from its key), and that the version is the store's.
TEST(StoredSettingsTest, ReadsEveryPrefix) {
  storage::MemoryQueueStore store;
  const std::string digest = adapters::ApiKeyDigest("acme-key-0123456789abc");
  const BudgetOverrides overrides = {{BudgetName::kTenantIntake, pacing::Budget{5, 1000, 1}}};
  const config::QuotaMap quotas = {{"monthly", {.limit = 9, .window = Millis(86'400'000)}}};
  ASSERT_TRUE(store.PutSetting(OverridesKey("acme"), RateLimitsToJson(overrides).dump()).ok());
  ASSERT_TRUE(store.PutSetting(QuotasKey("acme"), QuotasToJson(quotas).dump()).ok());
  ASSERT_TRUE(store
                  .PutSetting(CredentialKey("globex", "bot"),
                              CredentialToJson({.platform = "slack", .token = kToken}).dump())
                  .ok());
  ASSERT_TRUE(store.PutSetting(ApiKeysKey("acme"), ApiKeysToSetting({digest})).ok());
  ASSERT_TRUE(store.PutSetting(ApiKeysKey("globex"), ApiKeysToSetting({})).ok());

  auto read = ReadStoredSettings(store);
  ASSERT_TRUE(read) << read.error().ToString();
  EXPECT_EQ(read->version, *store.SettingsVersion());
  ASSERT_EQ(read->overrides.count("acme"), 1u);
  EXPECT_TRUE(SameOverrides(read->overrides.at("acme"), overrides));
  ASSERT_EQ(read->quotas.count("acme"), 1u);
  EXPECT_EQ(read->quotas.at("acme").at("monthly").limit, 9);
  ASSERT_EQ(read->credentials.size(), 1u);
  EXPECT_EQ(read->credentials[0].first, "globex");
  EXPECT_EQ(read->credentials[0].second.name, "bot");
  EXPECT_EQ(read->credentials[0].second.token, kToken);
  EXPECT_EQ(read->api_keys.at("acme"), std::vector<std::string>{digest});
  EXPECT_TRUE(read->api_keys.at("globex").empty());
}

// Verifies that a setting that does not parse is Corruption naming its key and never its value,
// for each prefix.
TEST(StoredSettingsTest, UnparsableSettingIsCorruptionNamingTheKey) {
  const std::string hidden = "hidden-value-" + std::string(kToken);
  for (const std::string& key :
       {OverridesKey("acme"), QuotasKey("acme"), CredentialKey("acme", "bot"), ApiKeysKey("acme"),
        std::string("credentials/no-separator")}) {
    storage::MemoryQueueStore store;
    ASSERT_TRUE(store.PutSetting(key, "{\"x\":\"" + hidden + "\"").ok());
    auto read = ReadStoredSettings(store);
    ASSERT_FALSE(read) << key;
    EXPECT_EQ(read.error().code(), Status::Code::kCorruption) << key;
    EXPECT_NE(read.error().message().find(key), std::string::npos) << read.error().ToString();
    EXPECT_EQ(read.error().message().find(hidden), std::string::npos) << read.error().ToString();
  }
}

// Verifies that a store that cannot be read gives its own error.
TEST(StoredSettingsTest, StoreErrorsPassThrough) {
  storage::MemoryQueueStore store;
  ASSERT_TRUE(store.Close().ok());
  auto read = ReadStoredSettings(store);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code(), Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace egress::service
