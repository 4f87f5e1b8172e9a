#include "dispatcher/service/service_options_from_config.h"

#include <gtest/gtest.h>

#include "config/config.h"

namespace egress::service {
namespace {

using config::Config;
using config::DefaultConfig;
using pacing::Budget;
using pacing::BudgetName;

// Verifies retry policies and in-flight caps land in the platform's SchedulerOptions slot.
TEST(ServiceOptionsFromConfigTest, SchedulerOptionsPerPlatform) {
  Config config = DefaultConfig();
  config.platform(Platform::kLine).retry.max_attempts = 3;
  config.platform(Platform::kLine).retry.schedule = {Millis(1000), Millis(2000)};
  config.platform(Platform::kDiscord).max_in_flight_per_destination = 2;
  config.platform(Platform::kWebhook).max_in_flight_per_platform = 9;
  config.server.pacing_margin_percent = 10;
  const pacing::SchedulerOptions options = ToSchedulerOptions(config);
  EXPECT_EQ(options.retry[static_cast<size_t>(Platform::kLine)].max_attempts, 3);
  EXPECT_EQ(options.retry[static_cast<size_t>(Platform::kLine)].schedule.size(), 2u);
  EXPECT_EQ(options.retry[static_cast<size_t>(Platform::kSlack)].max_attempts, 10);
  EXPECT_EQ(options.max_in_flight_per_destination[static_cast<size_t>(Platform::kDiscord)], 2);
  EXPECT_EQ(options.max_in_flight_per_platform[static_cast<size_t>(Platform::kWebhook)], 9);
  EXPECT_DOUBLE_EQ(options.pacing_margin, 0.10);
  const pacing::SchedulerOptions defaults;
  EXPECT_EQ(options.quantum, defaults.quantum);
  EXPECT_EQ(options.retry_budget, defaults.retry_budget);
}

// Verifies endpoints, the SSRF policy and the store options.
TEST(ServiceOptionsFromConfigTest, EndpointsAndStore) {
  Config config = DefaultConfig();
  config.platform(Platform::kSlack).base_url = "http://127.0.0.1:9001";
  config.platform(Platform::kWebhook).allow_private_networks = true;
  config.server.data_dir = "/tmp/egress";
  config.server.max_payload_bytes = 4096;
  const adapters::PlatformEndpoints endpoints = ToPlatformEndpoints(config);
  EXPECT_EQ(endpoints.slack_base_url, "http://127.0.0.1:9001");
  EXPECT_EQ(endpoints.discord_base_url, "https://discord.com");
  EXPECT_EQ(endpoints.line_base_url, "https://api.line.me");
  EXPECT_TRUE(endpoints.webhook_ssrf.allow_private_networks);
  EXPECT_FALSE(endpoints.webhook_ssrf.allow_cloud_metadata);
  const storage::StoreOptions store = ToStoreOptions(config);
  EXPECT_EQ(store.path, "/tmp/egress");
  EXPECT_EQ(store.max_payload_bytes, 4096u);
}

// Verifies [server.retention] reaches the service: each age, "off" as 0, and the interval; the
// defaults match the store's RetentionPolicy.
TEST(ServiceOptionsFromConfigTest, Retention) {
  Config config = DefaultConfig();
  const RetentionOptions defaults = ServiceOptionsFromConfig(config).retention;
  const storage::RetentionPolicy policy;
  EXPECT_EQ(defaults.policy.delivered_ms, policy.delivered_ms);
  EXPECT_EQ(defaults.policy.cancelled_ms, policy.cancelled_ms);
  EXPECT_EQ(defaults.policy.dead_ms, policy.dead_ms);
  EXPECT_EQ(defaults.policy.idempotency_ms, policy.idempotency_ms);
  EXPECT_EQ(defaults.interval, Millis(60'000));
  config.server.retention.delivered = Millis(3'000);
  config.server.retention.cancelled = Millis(0);
  config.server.retention.dead = Millis(5'000);
  config.server.retention.idempotency = Millis(7'000);
  config.server.retention.interval = Millis(2'000);
  const RetentionOptions set = ServiceOptionsFromConfig(config).retention;
  EXPECT_EQ(set.policy.delivered_ms, 3'000);
  EXPECT_EQ(set.policy.cancelled_ms, 0);
  EXPECT_EQ(set.policy.dead_ms, 5'000);
  EXPECT_EQ(set.policy.idempotency_ms, 7'000);
  EXPECT_EQ(set.interval, Millis(2'000));
  EXPECT_EQ(set.slice, RetentionOptions().slice);
}

// Verifies each platform's connect_timeout and timeout land in its own slot, defaults elsewhere.
TEST(ServiceOptionsFromConfigTest, TimeoutsPerPlatform) {
  Config config = DefaultConfig();
  config.platform(Platform::kWebhook).timeout = Millis(1000);
  config.platform(Platform::kWebhook).connect_timeout = Millis(250);
  config.platform(Platform::kDiscord).timeout = Millis(7000);
  const adapters::PlatformTimeouts timeouts = ToPlatformTimeouts(config);
  EXPECT_EQ(timeouts[static_cast<size_t>(Platform::kWebhook)],
            (adapters::RequestTimeouts{.connect = Millis(250), .total = Millis(1000)}));
  EXPECT_EQ(timeouts[static_cast<size_t>(Platform::kDiscord)],
            (adapters::RequestTimeouts{.connect = Millis(5000), .total = Millis(7000)}));
  EXPECT_EQ(timeouts[static_cast<size_t>(Platform::kSlack)], adapters::RequestTimeouts{});
  EXPECT_EQ(ServiceOptionsFromConfig(config).timeouts, timeouts);
}

// Verifies every [server], [budgets], [transport] and [tenants] value reaches ServiceOptions,
// the listen address already parsed.
TEST(ServiceOptionsFromConfigTest, WholeServiceOptions) {
  Config config = DefaultConfig();
  config.server.listen = {.host = "localhost", .port = 9000};
  config.server.admin_token = "admin-secret";
  config.server.data_dir = "/tmp/egress";
  config.server.max_payload_bytes = 4096;
  config.server.batch_max_items = 12;
  config.server.tenant_backlog_watermark = 77;
  config.server.tenant_max_stored_bytes = 1'000'000;
  config.budget(BudgetName::kWebhookDestination) = Budget{20, 1000, 2};
  config.transport.user_agent = "ua/2";
  config.tenants["acme"].weight = 3;
  config.tenants["acme"].credentials["hooks"] = {.name = "hooks", .platform = "webhook"};
  config.tenants["globex"].weight = 1;
  config.tenants["globex"].max_stored_bytes = 5000;
  const ServiceOptions o = ServiceOptionsFromConfig(config);
  EXPECT_EQ(o.http.listen, (HostPort{.host = "localhost", .port = 9000}));
  EXPECT_EQ(o.admin_token, "admin-secret");
  EXPECT_EQ(o.store.path, "/tmp/egress");
  EXPECT_EQ(o.intake.max_payload_bytes, 4096u);
  EXPECT_EQ(o.intake.max_batch_items, 12u);
  EXPECT_EQ(o.backlog_watermark, 77u);
  EXPECT_EQ(o.max_stored_bytes, 1'000'000u);
  EXPECT_EQ(o.tenant_max_stored_bytes, (std::map<std::string, uint64_t>{{"globex", 5000}}));
  EXPECT_EQ(o.transport.user_agent, "ua/2");
  ASSERT_EQ(o.budget_defaults.size(), static_cast<size_t>(pacing::BudgetNameCount()));
  for (const auto& [name, budget] : o.budget_defaults) {
    EXPECT_EQ(budget, config.budget(name));
  }
  EXPECT_EQ(o.budget_defaults[static_cast<size_t>(BudgetName::kWebhookDestination)].second,
            (Budget{20, 1000, 2}));
  const std::vector<std::pair<std::string, uint32_t>> weights = {{"acme", 3}, {"globex", 1}};
  EXPECT_EQ(o.tenant_weights, weights);
  ASSERT_EQ(o.credentials.size(), 1u);
  EXPECT_EQ(o.credentials[0].first, "acme");
  EXPECT_EQ(o.credentials[0].second.name, "hooks");
}

}  // namespace
}  // namespace egress::service
