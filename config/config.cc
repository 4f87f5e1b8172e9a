#include "config/config.h"

#include "dispatcher/scheduler.h"

namespace egress::config {

using dispatcher::Platform;

Config DefaultConfig() {
  Config config;
  const adapters::PlatformEndpoints endpoint_defaults;
  config.platform(Platform::kSlack).base_url = endpoint_defaults.slack_base_url;
  config.platform(Platform::kDiscord).base_url = endpoint_defaults.discord_base_url;
  config.platform(Platform::kLine).base_url = endpoint_defaults.line_base_url;
  config.platform(Platform::kWebhook).allow_private_networks =
      endpoint_defaults.webhook_ssrf.allow_private_networks;
  const dispatcher::SchedulerOptions scheduler_defaults;
  for (int i = 0; i < dispatcher::kPlatformCount; ++i) {
    config.platforms[i].max_in_flight_per_destination =
        scheduler_defaults.max_in_flight_per_destination[i];
    config.platforms[i].max_in_flight_per_platform =
        scheduler_defaults.max_in_flight_per_platform[i];
  }
  for (int i = 0; i < dispatcher::kBudgetNameCount; ++i) {
    config.budgets[i] = dispatcher::DefaultBudget(static_cast<dispatcher::BudgetName>(i));
  }
  return config;
}

}  // namespace egress::config
