#include <string>

#include <gtest/gtest.h>

#include "config/load_config.h"
#include "tests/config/config_files.h"

namespace egress::config {
namespace {

// Verifies tiers with budgets and quotas, a tenant naming its tier and quotas of its own.
TEST(TierConfigTest, ReadsTiersQuotasAndTenantTier) {
  ConfigFiles files;
  Result<Config> config = files.Load(R"(
[tiers.pro.budgets.tenant_intake]
limit = 500
scale_ms = 1000
[tiers.pro.quotas.monthly]
limit = 5000000
window = "30d"
[tiers.pro.quotas.line_daily]
limit = 20000
window = "24h"
platforms = ["line", "line"]
[tenants.acme]
tier = "pro"
[tenants.acme.quotas.monthly]
limit = 1000000
window = "30d"
[tenants.acme.quotas.trial]
limit = 100
window = "1h"
mode = "shadow"
)");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const TierConfig& pro = config->tiers.at("pro");
  ASSERT_EQ(pro.budgets.size(), 1u);
  EXPECT_EQ(pro.budgets[0].first, pacing::BudgetName::kTenantIntake);
  EXPECT_EQ(pro.budgets[0].second.limit, 500);
  EXPECT_EQ(pro.quotas.at("monthly").limit, 5'000'000);
  EXPECT_EQ(pro.quotas.at("monthly").window, Millis(30LL * 24 * 3600 * 1000));
  EXPECT_EQ(pro.quotas.at("line_daily").platforms, std::vector<std::string>{"line"});
  const TenantConfig& acme = config->tenants.at("acme");
  EXPECT_EQ(acme.tier, "pro");
  EXPECT_EQ(acme.quotas.at("monthly").limit, 1'000'000);
  EXPECT_FALSE(acme.quotas.at("monthly").shadow);
  EXPECT_TRUE(acme.quotas.at("trial").shadow);
}

// Verifies typed errors naming the field for every malformed tier or quota.
TEST(TierConfigTest, RefusesMalformedTiersAndQuotas) {
  struct Case {
    std::string text, error;
  };
  for (const Case& c : std::vector<Case>{
           {"[tenants.a]\ntier = \"gold\"\n", "tenants.a.tier: unknown tier \"gold\""},
           {"[tiers.pro]\nx = 1\n", "tiers.pro.x"},
           {"[tiers.pro.budgets.nope]\nlimit = 1\n", "unknown budget"},
           {"[tiers.pro.quotas.m]\nwindow = \"1d\"\n", "tiers.pro.quotas.m.limit: missing"},
           {"[tiers.pro.quotas.m]\nlimit = 5\n", "tiers.pro.quotas.m.window: missing"},
           {"[tiers.pro.quotas.m]\nlimit = 0\nwindow = \"1d\"\n", "tiers.pro.quotas.m.limit"},
           {"[tiers.pro.quotas.m]\nlimit = 5\nwindow = \"500ms\"\n", "must be from 1s to 366d"},
           {"[tiers.pro.quotas.m]\nlimit = 5\nwindow = \"400d\"\n", "must be from 1s to 366d"},
           {"[tiers.pro.quotas.m]\nlimit = 5\nwindow = \"1d\"\nplatforms = [\"fax\"]\n",
            "tiers.pro.quotas.m.platforms[0]"},
           {"[tiers.pro.quotas.m]\nlimit = 5\nwindow = \"1d\"\nplatforms = \"line\"\n",
            "must be a list"},
           {"[tenants.a.quotas.\"bad name\"]\nlimit = 5\nwindow = \"1d\"\n", "a quota name"},
           {"[tiers.pro.quotas.m]\nlimit = 5\nwindow = \"1d\"\nmode = \"dry\"\n",
            "tiers.pro.quotas.m.mode: must be \"enforce\" or \"shadow\""},
       }) {
    ConfigFiles files;
    Result<Config> config = files.Load(c.text);
    ASSERT_FALSE(config.has_value()) << c.text;
    EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(config.error().message().find(c.error), std::string::npos)
        << config.error().message();
  }
}

}  // namespace
}  // namespace egress::config
