#include "config/config_mapping.h"

#include <gtest/gtest.h>

#include "config/config.h"

namespace egress::config {
namespace {

using pacing::Budget;
using pacing::BudgetName;

// Verifies retry policies and in-flight caps land in the platform's SchedulerOptions slot.
TEST(ConfigMappingTest, SchedulerOptionsPerPlatform) {
  Config config = DefaultConfig();
  config.platform(Platform::kLine).retry.max_attempts = 3;
  config.platform(Platform::kLine).retry.schedule = {Millis(1000), Millis(2000)};
  config.platform(Platform::kDiscord).max_in_flight_per_destination = 2;
  config.platform(Platform::kWebhook).max_in_flight_per_platform = 9;
  const pacing::SchedulerOptions options = ToSchedulerOptions(config);
  EXPECT_EQ(options.retry[static_cast<size_t>(Platform::kLine)].max_attempts, 3);
  EXPECT_EQ(options.retry[static_cast<size_t>(Platform::kLine)].schedule.size(), 2u);
  EXPECT_EQ(options.retry[static_cast<size_t>(Platform::kSlack)].max_attempts, 10);
  EXPECT_EQ(options.max_in_flight_per_destination[static_cast<size_t>(Platform::kDiscord)], 2);
  EXPECT_EQ(options.max_in_flight_per_platform[static_cast<size_t>(Platform::kWebhook)], 9);
  const pacing::SchedulerOptions defaults;
  EXPECT_EQ(options.quantum, defaults.quantum);
  EXPECT_EQ(options.retry_budget, defaults.retry_budget);
}

// Verifies endpoints, the SSRF policy, the store and transport options.
TEST(ConfigMappingTest, EndpointsStoreAndTransport) {
  Config config = DefaultConfig();
  config.platform(Platform::kSlack).base_url = "http://127.0.0.1:9001";
  config.platform(Platform::kWebhook).allow_private_networks = true;
  config.server.data_dir = "/tmp/egress";
  config.server.max_payload_bytes = 4096;
  config.transport.user_agent = "ua/2";
  const adapters::PlatformEndpoints endpoints = ToPlatformEndpoints(config);
  EXPECT_EQ(endpoints.slack_base_url, "http://127.0.0.1:9001");
  EXPECT_EQ(endpoints.discord_base_url, "https://discord.com");
  EXPECT_EQ(endpoints.line_base_url, "https://api.line.me");
  EXPECT_TRUE(endpoints.webhook_ssrf.allow_private_networks);
  EXPECT_FALSE(endpoints.webhook_ssrf.allow_cloud_metadata);
  const storage::StoreOptions store = ToStoreOptions(config);
  EXPECT_EQ(store.path, "/tmp/egress");
  EXPECT_EQ(store.max_payload_bytes, 4096u);
  EXPECT_EQ(ToTransportOptions(config).user_agent, "ua/2");
}

// Verifies configured budgets become the table's deployment defaults.
TEST(ConfigMappingTest, BudgetDefaults) {
  Config config = DefaultConfig();
  config.budget(BudgetName::kWebhookDestination) = Budget{20, 1000, 2};
  pacing::BudgetTable table;
  ASSERT_TRUE(ApplyBudgetDefaults(config, table).ok());
  EXPECT_EQ(table.Effective("any", BudgetName::kWebhookDestination), (Budget{20, 1000, 2}));
  EXPECT_EQ(table.Effective("any", BudgetName::kSlackChannel), (Budget{1, 1000, 3}));
  config.budget(BudgetName::kLineChannel).limit = 0;
  EXPECT_EQ(ApplyBudgetDefaults(config, table).code(), Status::Code::kInvalidArgument);
}

// Verifies a platform's timeouts are stamped on a request.
TEST(ConfigMappingTest, AppliesTimeouts) {
  PlatformConfig platform;
  platform.connect_timeout = Millis(250);
  platform.timeout = Millis(3000);
  adapters::HttpRequest request;
  ApplyTimeouts(platform, request);
  EXPECT_EQ(request.connect_timeout, Millis(250));
  EXPECT_EQ(request.timeout, Millis(3000));
}

}  // namespace
}  // namespace egress::config
