#include "config/config.h"

#include "dispatcher/pacing/scheduler.h"

namespace egress::config {

Config DefaultConfig() {
  Config config;
  const adapters::PlatformEndpoints endpoint_defaults;
  config.platform(Platform::kSlack).base_url = endpoint_defaults.slack_base_url;
  config.platform(Platform::kDiscord).base_url = endpoint_defaults.discord_base_url;
  config.platform(Platform::kLine).base_url = endpoint_defaults.line_base_url;
  config.platform(Platform::kWebhook).allow_private_networks =
      endpoint_defaults.webhook_ssrf.allow_private_networks;
  const pacing::SchedulerOptions scheduler_defaults;
  for (int i = 0; i < kMaxPlatforms; ++i) {
    config.platforms[i].max_in_flight_per_destination =
        scheduler_defaults.max_in_flight_per_destination[i];
    config.platforms[i].max_in_flight_per_platform =
        scheduler_defaults.max_in_flight_per_platform[i];
  }
  for (int i = 0; i < pacing::kMaxBudgetNames; ++i) {
    config.budgets[i] = pacing::DefaultBudget(static_cast<pacing::BudgetName>(i));
  }
  return config;
}

}  // namespace egress::config
