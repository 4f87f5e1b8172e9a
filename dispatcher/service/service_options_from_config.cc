#include "dispatcher/service/service_options_from_config.h"

#include "dispatcher/base/process_memory.h"

namespace egress::service {

ServiceOptions ServiceOptionsFromConfig(const config::Config& config) {
  ServiceOptions o;
  o.http.listen = config.server.listen;
  o.http.max_connections = config.server.max_connections;
  o.http.max_connections_per_address = config.server.max_connections_per_address;
  o.http.header_timeout = config.server.header_timeout;
  o.http.idle_timeout = config.server.idle_timeout;
  o.http.read_timeout = config.server.read_timeout;
  o.http.max_body_bytes_in_flight = config.server.max_body_bytes_in_flight;
  o.http.release_free_memory = ReleaseFreeMemory;
  // Checked as the config was read (ReadTrustedProxies): it parses.
  o.http.proxy_protocol = config.server.proxy_protocol;
  if (Result<TrustedProxies> proxies = TrustedProxies::Parse(config.server.trusted_proxies)) {
    o.http.trusted_proxies = std::move(*proxies);
  }
  o.http.write_timeout = config.server.write_timeout;
  o.admin_token = config.server.admin_token;
  o.secrets_key_file = config.server.secrets_key_file;
  o.secrets_key_env = config.server.secrets_key_env;
  o.auth.required = config.server.auth == config::AuthMode::kRequired;
  o.auth.metrics_auth = config.server.metrics_auth;
  o.auth.failure_budget = {config.server.auth_failure_budget, 60'000,
                           config.server.auth_failure_budget};
  o.store = ToStoreOptions(config);
  if (config.store.backend == config::StoreBackend::kPostgres) {
    o.postgres =
        storage::PostgresStoreOptions{.url = config.store.url,
                                      .password = config.store.password,
                                      .pool_size = static_cast<size_t>(config.store.pool_size)};
  }
  o.scheduler = ToSchedulerOptions(config);
  for (int i = 0; i < pacing::BudgetNameCount(); ++i) {
    const auto name = static_cast<pacing::BudgetName>(i);
    o.budget_defaults.emplace_back(name, config.budget(name));
  }
  for (const Platform p : config.Platforms()) {
    if (const std::optional<adapters::ProfileSpec>& profile = config.platform(p).profile) {
      o.profiles.push_back(*profile);
      o.profiles.back().base_url = config.platform(p).base_url;
    }
  }
  o.endpoints = ToPlatformEndpoints(config);
  o.timeouts = ToPlatformTimeouts(config);
  for (int i = 0; i < kMaxPlatforms; ++i) {
    o.trust[i] = {.ca_file = config.platforms[i].ca_file, .ca_path = config.platforms[i].ca_path};
  }
  o.transport = config.transport;
  o.intake.max_payload_bytes = config.server.max_payload_bytes;
  o.intake.max_batch_items = config.server.batch_max_items;
  o.intake.max_json_depth = config.server.max_json_depth;
  o.intake.max_batch_bytes = config.server.max_batch_bytes;
  o.intake.max_requests_in_flight = config.server.tenant_max_requests_in_flight;
  o.loop.destination_idle = config.server.destination_idle;
  o.loop.discord_invalid_requests.threshold = config.server.discord_invalid_request_stop;
  o.backlog_watermark = config.server.tenant_backlog_watermark;
  o.max_stored_bytes = config.server.tenant_max_stored_bytes;
  o.retention = ToRetentionOptions(config);
  o.shared_budgets = ToSharedBudgetOptions(config);
  for (const auto& [tenant, t] : config.tenants) {
    o.tenant_weights.emplace_back(tenant, t.weight);
    if (t.max_in_flight > 0) {
      o.tenant_max_in_flight.emplace_back(tenant, t.max_in_flight);
    }
    if (t.max_stored_bytes > 0) {
      o.tenant_max_stored_bytes.emplace(tenant, t.max_stored_bytes);
    }
    for (const std::string& digest : t.api_key_digests) {
      o.auth.api_keys.emplace_back(tenant, digest);
    }
    for (const auto& [name, credential] : t.credentials) {
      o.credentials.emplace_back(tenant, credential);
      if (auto ref = t.credential_refs.find(name); ref != t.credential_refs.end()) {
        o.credential_refs.push_back({tenant, credential, ref->second});
      }
    }
    if (!t.tier.empty()) {
      o.quotas.tenant_tiers.emplace(tenant, t.tier);
    }
    if (!t.quotas.empty()) {
      o.quotas.tenant_quotas.emplace(tenant, t.quotas);
    }
  }
  o.quotas.tiers = config.tiers;
  return o;
}

pacing::SchedulerOptions ToSchedulerOptions(const config::Config& config) {
  pacing::SchedulerOptions options;
  for (int i = 0; i < kMaxPlatforms; ++i) {
    const config::PlatformConfig& platform = config.platforms[i];
    options.retry[i] = platform.retry;
    options.scopes[i] = platform.scopes;
    options.max_in_flight_per_destination[i] = platform.max_in_flight_per_destination;
    options.max_in_flight_per_platform[i] = platform.max_in_flight_per_platform;
  }
  options.pacing_margin = static_cast<double>(config.server.pacing_margin_percent) / 100.0;
  options.bulk_share = static_cast<double>(config.server.bulk_share_percent) / 100.0;
  return options;
}

SharedBudgetOptions ToSharedBudgetOptions(const config::Config& config) {
  const config::ClusterOptions& cluster = config.cluster;
  SharedBudgetOptions options;
  options.enabled = cluster.enabled();
  options.redis.host = cluster.redis.host;
  options.redis.port = cluster.redis.port;
  options.redis.db = cluster.redis.db;
  options.redis.password = cluster.redis.password;
  options.key_prefix = cluster.key_prefix;
  options.node_id = cluster.node_id.empty() ? config.server.listen.ToString() : cluster.node_id;
  if (cluster.budget_store == config::BudgetStoreKind::kDynamoDb) {
    adapters::DynamoDbOptions dynamodb;
    dynamodb.endpoint = cluster.dynamodb.endpoint;
    dynamodb.region = cluster.dynamodb.region;
    dynamodb.table = cluster.dynamodb.table;
    dynamodb.credentials = cluster.dynamodb.credentials;
    dynamodb.create_table = cluster.dynamodb.create_table;
    options.dynamodb = std::move(dynamodb);
    // A round trip to DynamoDB costs milliseconds and a write unit, so a fast budget's slice may
    // be larger and live longer: still at most lease_window (20 ms) of its budget, so only
    // budgets over 3,200/s get more than Redis' 64 units, and a node holds no more of any budget
    // than with Redis; a window of a platform sees at most one slice per node sent late either
    // way (docs/deployment.md, "DynamoDB"; bench/README.md section 15).
    options.lease.max_slice = 512;
    options.lease.lease_ttl = pacing::Nanos(300'000'000);
  }
  options.lease.expected_nodes = cluster.expected_nodes;
  options.lease.down_mode = cluster.on_redis_down == config::RedisDownMode::kHold
                                ? pacing::BackendDownMode::kHold
                                : pacing::BackendDownMode::kLocalShare;
  return options;
}

RetentionOptions ToRetentionOptions(const config::Config& config) {
  const config::RetentionConfig& r = config.server.retention;
  RetentionOptions options;
  options.policy = {.delivered_ms = r.delivered.count(),
                    .cancelled_ms = r.cancelled.count(),
                    .dead_ms = r.dead.count(),
                    .idempotency_ms = r.idempotency.count()};
  options.interval = r.interval;
  return options;
}

adapters::PlatformEndpoints ToPlatformEndpoints(const config::Config& config) {
  adapters::PlatformEndpoints endpoints;
  endpoints.slack_base_url = config.platform(Platform::kSlack).base_url;
  endpoints.discord_base_url = config.platform(Platform::kDiscord).base_url;
  endpoints.line_base_url = config.platform(Platform::kLine).base_url;
  endpoints.webhook_ssrf.allow_private_networks =
      config.platform(Platform::kWebhook).allow_private_networks;
  // A tenant with a network policy of its own gets its own SSRF policy; the others use the
  // global one.
  for (const auto& [tenant, t] : config.tenants) {
    if (!t.allow_private_networks && t.allowed_cidrs.empty()) {
      continue;
    }
    adapters::SsrfPolicy policy = endpoints.webhook_ssrf;
    policy.allow_private_networks =
        t.allow_private_networks.value_or(endpoints.webhook_ssrf.allow_private_networks);
    policy.allowed_cidrs = t.allowed_cidrs;
    endpoints.tenant_webhook_ssrf.emplace(tenant, std::move(policy));
  }
  return endpoints;
}

adapters::PlatformTimeouts ToPlatformTimeouts(const config::Config& config) {
  adapters::PlatformTimeouts timeouts;
  for (int i = 0; i < kMaxPlatforms; ++i) {
    timeouts[i] = {.connect = config.platforms[i].connect_timeout,
                   .total = config.platforms[i].timeout};
  }
  return timeouts;
}

storage::StoreOptions ToStoreOptions(const config::Config& config) {
  storage::StoreOptions options;
  options.path = config.server.data_dir;
  options.max_payload_bytes = config.server.max_payload_bytes;
  options.memtable_bytes = static_cast<size_t>(config.store.memtable_mb) << 20;
  options.block_cache_bytes = static_cast<size_t>(config.store.block_cache_mb) << 20;
  return options;
}

}  // namespace egress::service
