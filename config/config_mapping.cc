#include "config/config_mapping.h"

namespace egress::config {


pacing::SchedulerOptions ToSchedulerOptions(const Config& config) {
  pacing::SchedulerOptions options;
  for (int i = 0; i < kPlatformCount; ++i) {
    const PlatformConfig& platform = config.platforms[i];
    options.retry[i] = platform.retry;
    options.max_in_flight_per_destination[i] = platform.max_in_flight_per_destination;
    options.max_in_flight_per_platform[i] = platform.max_in_flight_per_platform;
  }
  options.pacing_margin = static_cast<double>(config.server.pacing_margin_percent) / 100.0;
  return options;
}

adapters::PlatformEndpoints ToPlatformEndpoints(const Config& config) {
  adapters::PlatformEndpoints endpoints;
  endpoints.slack_base_url = config.platform(Platform::kSlack).base_url;
  endpoints.discord_base_url = config.platform(Platform::kDiscord).base_url;
  endpoints.line_base_url = config.platform(Platform::kLine).base_url;
  endpoints.webhook_ssrf.allow_private_networks =
      config.platform(Platform::kWebhook).allow_private_networks;
  return endpoints;
}

adapters::TransportOptions ToTransportOptions(const Config& config) { return config.transport; }

storage::StoreOptions ToStoreOptions(const Config& config) {
  storage::StoreOptions options;
  options.path = config.server.data_dir;
  options.max_payload_bytes = config.server.max_payload_bytes;
  return options;
}

Status ApplyBudgetDefaults(const Config& config, pacing::BudgetTable& table) {
  for (int i = 0; i < pacing::kBudgetNameCount; ++i) {
    Status status = table.SetDefault(static_cast<pacing::BudgetName>(i), config.budgets[i]);
    if (!status.ok()) {
      return status;
    }
  }
  return Status::Ok();
}

void ApplyTimeouts(const PlatformConfig& platform, adapters::HttpRequest& request) {
  request.connect_timeout = platform.connect_timeout;
  request.timeout = platform.timeout;
}

}  // namespace egress::config
