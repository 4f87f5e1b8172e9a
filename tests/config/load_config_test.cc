#include "config/load_config.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "adapters/api_key.h"
#include "config/duration.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/config/config_files.h"

namespace egress::config {
namespace {

using pacing::Budget;
using pacing::BudgetName;

std::vector<Millis> Durations(std::initializer_list<const char*> texts) {
  std::vector<Millis> out;
  for (const char* t : texts) {
    out.push_back(*ParseDuration(t));
  }
  return out;
}

// Verifies empty files leave every built-in default in place.
TEST(LoadConfigTest, EmptyFilesGiveDefaults) {
  ConfigFiles files;
  Result<Config> config = files.Load("");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.listen.ToString(), "127.0.0.1:8686");
  EXPECT_EQ(config->server.data_dir, "./var/data");
  EXPECT_EQ(config->server.admin_token, "");
  EXPECT_EQ(config->server.max_payload_bytes, 1u << 20);
  EXPECT_EQ(config->server.batch_max_items, 1000u);
  EXPECT_EQ(config->server.max_json_depth, 64u);
  EXPECT_EQ(config->server.tenant_backlog_watermark, 100'000u);
  EXPECT_EQ(config->server.retention.delivered, Millis(7 * 86'400'000LL));
  EXPECT_EQ(config->server.retention.cancelled, Millis(7 * 86'400'000LL));
  EXPECT_EQ(config->server.retention.dead, Millis(30 * 86'400'000LL));
  EXPECT_EQ(config->server.retention.idempotency, Millis(86'400'000));
  EXPECT_EQ(config->server.retention.interval, Millis(60'000));
  EXPECT_EQ(config->server.max_batch_bytes, 16u << 20);
  EXPECT_EQ(config->server.max_connections, 4096u);
  EXPECT_EQ(config->server.max_connections_per_address, 64u);
  EXPECT_EQ(config->server.header_timeout, Millis(10'000));
  EXPECT_EQ(config->server.idle_timeout, Millis(60'000));
  EXPECT_EQ(config->server.max_body_bytes_in_flight, 256u << 20);
  EXPECT_TRUE(config->server.trusted_proxies.empty());
  EXPECT_FALSE(config->server.proxy_protocol);
  EXPECT_FALSE(config->server.core_dumps);
  EXPECT_EQ(config->server.read_timeout, Millis(60'000));
  EXPECT_EQ(config->server.write_timeout, Millis(30'000));
  EXPECT_EQ(config->server.tenant_max_requests_in_flight, 256u);
  EXPECT_EQ(config->server.destination_idle, Millis(600'000));
  EXPECT_EQ(config->platform(Platform::kSlack).base_url, "https://slack.com");
  EXPECT_EQ(config->platform(Platform::kDiscord).base_url, "https://discord.com");
  EXPECT_EQ(config->platform(Platform::kLine).base_url, "https://api.line.me");
  EXPECT_EQ(config->platform(Platform::kWebhook).base_url, "");
  EXPECT_FALSE(config->platform(Platform::kWebhook).allow_private_networks);
  const pacing::SchedulerOptions scheduler;
  for (int i = 0; i < kBuiltinPlatformCount; ++i) {
    EXPECT_EQ(config->platforms[i].max_in_flight_per_destination,
              scheduler.max_in_flight_per_destination[i]);
    EXPECT_EQ(config->platforms[i].retry.max_attempts, 10);
    EXPECT_TRUE(config->platforms[i].retry.schedule.empty());
    EXPECT_EQ(config->platforms[i].timeout, Millis(15'000));
    EXPECT_EQ(config->platforms[i].connect_timeout, Millis(5'000));
  }
  for (int i = 0; i < pacing::kBudgetNameCount; ++i) {
    EXPECT_EQ(config->budgets[i], pacing::DefaultBudget(static_cast<BudgetName>(i)));
  }
  EXPECT_TRUE(config->tenants.empty());
  EXPECT_EQ(config->transport.user_agent, "relay-egress/0.1");
  const std::vector<std::string> sources = {
      files.profile_path("slack"), files.profile_path("discord"), files.profile_path("line"),
      files.profile_path("webhook"), files.main_path()};
  EXPECT_EQ(config->sources, sources);
}

// Verifies profile values apply first and the main file overrides single fields, keeping the
// profile's other fields; a list is replaced whole.
TEST(LoadConfigTest, MainFileOverridesProfileFieldByField) {
  ConfigFiles files;
  files.WriteProfile("slack",
                     "[platforms.slack]\n"
                     "base_url = \"https://slack.example\"\n"
                     "timeout = \"20s\"\n"
                     "[platforms.slack.retry]\n"
                     "schedule = [\"1s\", \"2s\"]\n"
                     "max_attempts = 3\n"
                     "[budgets.slack_channel]\n"
                     "limit = 2\n"
                     "burst = 5\n");
  files.WriteProfile("webhook",
                     "[platforms.webhook.retry]\n"
                     "schedule = [\"5s\", \"5m\", \"30m\"]\n");
  Result<Config> config = files.Load(
      "[platforms.slack]\n"
      "timeout = \"30s\"\n"
      "[platforms.webhook.retry]\n"
      "schedule = [\"10s\"]\n"
      "[budgets.slack_channel]\n"
      "limit = 4\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const PlatformConfig& slack = config->platform(Platform::kSlack);
  EXPECT_EQ(slack.base_url, "https://slack.example");  // profile
  EXPECT_EQ(slack.timeout, Millis(30'000));            // main
  EXPECT_EQ(slack.retry.schedule, Durations({"1s", "2s"}));
  EXPECT_EQ(slack.retry.max_attempts, 3);
  EXPECT_EQ(config->platform(Platform::kWebhook).retry.schedule, Durations({"10s"}));
  EXPECT_EQ(config->budget(BudgetName::kSlackChannel), (Budget{4, 1000, 5}));
}

// Verifies server.listen may be a host name, kept as a name (the service resolves it).
TEST(LoadConfigTest, ListenAcceptsHostName) {
  ConfigFiles files;
  Result<Config> config = files.Load("[server]\nlisten = \"localhost:8686\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.listen, (HostPort{.host = "localhost", .port = 8686}));
}

// Verifies [server.retention]: days and other units, "off" and a zero duration (keep forever),
// and that an absent key keeps its default.
TEST(LoadConfigTest, ReadsRetention) {
  ConfigFiles files;
  Result<Config> config = files.Load(
      "[server.retention]\n"
      "delivered = \"3d\"\n"
      "cancelled = \"off\"\n"
      "dead = \"0s\"\n"
      "idempotency = \"36h\"\n"
      "interval = \"30s\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.retention.delivered, Millis(3 * 86'400'000LL));
  EXPECT_EQ(config->server.retention.cancelled, Millis(0));
  EXPECT_EQ(config->server.retention.dead, Millis(0));
  EXPECT_EQ(config->server.retention.idempotency, Millis(36 * 3'600'000LL));
  EXPECT_EQ(config->server.retention.interval, Millis(30'000));
  Result<Config> partial = files.Load("server.retention.dead = \"off\"\n");
  ASSERT_TRUE(partial.has_value()) << partial.error().ToString();
  EXPECT_EQ(partial->server.retention.dead, Millis(0));
  EXPECT_EQ(partial->server.retention.delivered, Millis(7 * 86'400'000LL));
}

// Verifies dotted keys and inline tables work like table headers.
TEST(LoadConfigTest, AcceptsDottedKeysAndInlineTables) {
  ConfigFiles files;
  Result<Config> config = files.Load(
      "budgets.tenant_egress = { limit = 10, scale_ms = 100 }\n"
      "platforms.line.retry.max_age = \"2h\"\n"
      "server.listen = \"[::1]:0\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->budget(BudgetName::kTenantEgress), (Budget{10, 100, 1}));
  EXPECT_EQ(config->platform(Platform::kLine).retry.max_age, Millis(7'200'000));
  EXPECT_EQ(config->server.listen.ToString(), "[::1]:0");
}

// Verifies every [server], [transport] and [platforms.*] key reaches its field.
TEST(LoadConfigTest, ReadsEveryScalarKey) {
  ConfigFiles files;
  Result<Config> config = files.Load(
      "[server]\n"
      "listen = \"0.0.0.0:9000\"\n"
      "data_dir = \"/srv/egress\"\n"
      "admin_token = \"file-token\"\n"
      "max_payload_bytes = 2048\n"
      "batch_max_items = 10\n"
      "max_json_depth = 8\n"
      "tenant_backlog_watermark = 5\n"
      "max_batch_bytes = 100000\n"
      "max_connections = 12\n"
      "max_connections_per_address = 0\n"
      "header_timeout = \"2s\"\n"
      "idle_timeout = \"30s\"\n"
      "max_body_bytes_in_flight = 300000\n"
      "trusted_proxies = [\"10.0.0.0/8\", \"::1/128\"]\n"
      "proxy_protocol = true\n"
      "core_dumps = true\n"
      "read_timeout = \"5s\"\n"
      "write_timeout = \"7s\"\n"
      "tenant_max_requests_in_flight = 3\n"
      "destination_idle = \"2m\"\n"
      "[transport]\n"
      "max_host_connections = 2\n"
      "http_version = \"1.1\"\n"
      "max_concurrent_streams = 50\n"
      "min_tls_version = \"1.3\"\n"
      "max_total_connections = 3\n"
      "max_response_body = 4096\n"
      "ca_file = \"/etc/ca.pem\"\n"
      "ca_path = \"/etc/certs\"\n"
      "user_agent = \"test/1\"\n"
      "[platforms.webhook]\n"
      "allow_private_networks = true\n"
      "connect_timeout = \"250ms\"\n"
      "timeout = \"2s\"\n"
      "max_in_flight_per_destination = 7\n"
      "max_in_flight_per_platform = 70\n"
      "[platforms.webhook.retry]\n"
      "max_attempts = 2\n"
      "max_age = \"1h\"\n"
      "base_backoff = \"3s\"\n"
      "max_backoff = \"1m\"\n"
      "throttle_wait = \"9s\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.listen.ToString(), "0.0.0.0:9000");
  EXPECT_EQ(config->server.data_dir, "/srv/egress");
  EXPECT_EQ(config->server.admin_token, "file-token");
  EXPECT_EQ(config->server.max_connections_per_address, 0u);
  EXPECT_EQ(config->server.header_timeout, Millis(2'000));
  EXPECT_EQ(config->server.idle_timeout, Millis(30'000));
  EXPECT_EQ(config->server.max_body_bytes_in_flight, 300000u);
  EXPECT_EQ(config->server.trusted_proxies, (std::vector<std::string>{"10.0.0.0/8", "::1/128"}));
  EXPECT_TRUE(config->server.proxy_protocol);
  EXPECT_TRUE(config->server.core_dumps);
  EXPECT_EQ(config->server.max_payload_bytes, 2048u);
  EXPECT_EQ(config->server.batch_max_items, 10u);
  EXPECT_EQ(config->server.max_json_depth, 8u);
  EXPECT_EQ(config->server.tenant_backlog_watermark, 5u);
  EXPECT_EQ(config->server.max_batch_bytes, 100'000u);
  EXPECT_EQ(config->server.max_connections, 12u);
  EXPECT_EQ(config->server.read_timeout, Millis(5000));
  EXPECT_EQ(config->server.write_timeout, Millis(7000));
  EXPECT_EQ(config->server.tenant_max_requests_in_flight, 3u);
  EXPECT_EQ(config->server.destination_idle, Millis(120'000));
  EXPECT_EQ(config->transport.max_host_connections, 2);
  EXPECT_EQ(config->transport.max_total_connections, 3);
  EXPECT_EQ(config->transport.max_response_body, 4096u);
  EXPECT_EQ(config->transport.ca_file, "/etc/ca.pem");
  EXPECT_EQ(config->transport.ca_path, "/etc/certs");
  EXPECT_EQ(config->transport.user_agent, "test/1");
  EXPECT_EQ(config->transport.http_version, adapters::HttpVersion::kHttp11);
  EXPECT_EQ(config->transport.max_concurrent_streams, 50);
  EXPECT_EQ(config->transport.min_tls_version, adapters::TlsVersion::kTls13);
  const PlatformConfig& hook = config->platform(Platform::kWebhook);
  EXPECT_TRUE(hook.allow_private_networks);
  EXPECT_EQ(hook.connect_timeout, Millis(250));
  EXPECT_EQ(hook.timeout, Millis(2000));
  EXPECT_EQ(hook.max_in_flight_per_destination, 7);
  EXPECT_EQ(hook.max_in_flight_per_platform, 70);
  EXPECT_EQ(hook.retry.max_attempts, 2);
  EXPECT_EQ(hook.retry.max_age, Millis(3'600'000));
  EXPECT_EQ(hook.retry.base_backoff, Millis(3000));
  EXPECT_EQ(hook.retry.max_backoff, Millis(60'000));
  EXPECT_EQ(hook.retry.throttle_wait, Millis(9000));
}

// Verifies a non-empty RELAY_EGRESS_ADMIN_TOKEN replaces the file's admin_token.
TEST(LoadConfigTest, EnvironmentAdminTokenWins) {
  ConfigFiles files;
  const std::string text = "[server]\nadmin_token = \"from-file\"\n";
  Result<Config> file_only = files.Load(text);
  ASSERT_TRUE(file_only.has_value());
  EXPECT_EQ(file_only->server.admin_token, "from-file");
  Result<Config> env = files.Load(text, {{"RELAY_EGRESS_ADMIN_TOKEN", "from-env"}});
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->server.admin_token, "from-env");
  Result<Config> empty_env = files.Load(text, {{"RELAY_EGRESS_ADMIN_TOKEN", ""}});
  ASSERT_TRUE(empty_env.has_value());
  EXPECT_EQ(empty_env->server.admin_token, "from-file");
  Result<Config> env_only = files.Load("", {{"RELAY_EGRESS_ADMIN_TOKEN", "only-env"}});
  ASSERT_TRUE(env_only.has_value());
  EXPECT_EQ(env_only->server.admin_token, "only-env");
}

// Verifies tenants, weights and each credential form (token, secret, rotated secrets).
TEST(LoadConfigTest, ReadsTenantsAndCredentials) {
  ConfigFiles files;
  Result<Config> config = files.Load(
      "[tenants.acme]\n"
      "weight = 3\n"
      "[tenants.acme.credentials.ops-slack]\n"
      "platform = \"slack\"\n"
      "token = \"xoxb-1\"\n"
      "[tenants.acme.credentials.hooks]\n"
      "platform = \"webhook\"\n"
      "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
      "[tenants.beta.credentials.rotating]\n"
      "platform = \"webhook\"\n"
      "secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\", "
      "\"whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"]\n"
      "[tenants.beta.credentials.line]\n"
      "platform = \"line\"\n"
      "token = \"line-token\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  ASSERT_EQ(config->tenants.size(), 2u);
  const TenantConfig& acme = config->tenants.at("acme");
  EXPECT_EQ(acme.weight, 3u);
  ASSERT_EQ(acme.credentials.size(), 2u);
  const adapters::Credential& slack = acme.credentials.at("ops-slack");
  EXPECT_EQ(slack.name, "ops-slack");
  EXPECT_EQ(slack.platform, "slack");
  EXPECT_EQ(slack.token, "xoxb-1");
  EXPECT_TRUE(slack.secrets.empty());
  const adapters::Credential& hooks = acme.credentials.at("hooks");
  EXPECT_EQ(hooks.platform, "webhook");
  EXPECT_EQ(hooks.secrets, std::vector<std::string>{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"});
  const TenantConfig& beta = config->tenants.at("beta");
  EXPECT_EQ(beta.weight, 1u);
  EXPECT_EQ(beta.credentials.at("rotating").secrets.size(), 2u);
  EXPECT_EQ(beta.credentials.at("line").token, "line-token");
}

// Verifies LoadOptions::profiles_dir replaces the directory next to the main file.
TEST(LoadConfigTest, ProfilesDirOption) {
  ConfigFiles files;
  ConfigFiles other;
  other.WriteProfile("line", "[budgets.line_channel]\nlimit = 7\n");
  ConfigFiles::Write(files.main_path(), "");
  LoadOptions options;
  options.profiles_dir = other.dir().Sub("profiles");
  options.getenv = [](std::string_view) { return std::nullopt; };
  Result<Config> config = LoadConfig(files.main_path(), options);
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->budget(BudgetName::kLineChannel).limit, 7);
  EXPECT_EQ(config->sources[2], other.profile_path("line"));
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<Config> LoadShipped(const std::string& main_path) {
  LoadOptions options;
  options.profiles_dir = SourceRootForTest() + "/config/profiles";
  options.getenv = [](std::string_view) { return std::nullopt; };
  return LoadConfig(main_path, options);
}

// Verifies config/relay-egress.toml and the four shipped profiles load, and that the profiles'
// budgets match DefaultBudget (issue 5's table).
TEST(LoadConfigTest, ShippedDefaultConfigLoads) {
  Result<Config> config = LoadShipped(SourceRootForTest() + "/config/relay-egress.toml");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.listen.ToString(), "127.0.0.1:8686");
  EXPECT_EQ(config->server.data_dir, "./var/data");
  EXPECT_EQ(config->server.admin_token, "");
  // The local example tenant: one API key, its credentials commented out.
  ASSERT_EQ(config->tenants.size(), 1u);
  EXPECT_EQ(config->tenants.at("example").api_key_digests.size(), 1u);
  EXPECT_TRUE(config->tenants.at("example").credentials.empty());
  EXPECT_EQ(config->server.auth, AuthMode::kRequired);
  for (int i = 0; i < pacing::kBudgetNameCount; ++i) {
    const auto name = static_cast<BudgetName>(i);
    EXPECT_EQ(config->budgets[i], pacing::DefaultBudget(name)) << pacing::BudgetNameString(name);
  }
  const PlatformConfig& hook = config->platform(Platform::kWebhook);
  EXPECT_EQ(hook.retry.schedule, Durations({"5s", "5m", "30m", "2h", "5h", "10h", "10h"}));
  EXPECT_EQ(hook.retry.max_attempts, 8);
  EXPECT_FALSE(hook.allow_private_networks);
  EXPECT_EQ(config->platform(Platform::kSlack).base_url, "https://slack.com");
  EXPECT_EQ(config->platform(Platform::kSlack).retry.max_attempts, 11);
  EXPECT_EQ(config->platform(Platform::kLine).retry.max_age, Millis(23 * 3'600'000));
  const pacing::SchedulerOptions scheduler;
  for (int i = 0; i < kBuiltinPlatformCount; ++i) {
    EXPECT_EQ(config->platforms[i].max_in_flight_per_destination,
              scheduler.max_in_flight_per_destination[i]);
    EXPECT_EQ(config->platforms[i].max_in_flight_per_platform,
              scheduler.max_in_flight_per_platform[i]);
    // Every shipped schedule is exhausted before max_attempts says stop.
    EXPECT_EQ(config->platforms[i].retry.schedule.size() + 1,
              static_cast<size_t>(config->platforms[i].retry.max_attempts));
  }
}

// Verifies the commented example tenant in config/relay-egress.toml is valid once uncommented.
TEST(LoadConfigTest, ShippedExampleTenantLoadsWhenUncommented) {
  std::string text = ReadText(SourceRootForTest() + "/config/relay-egress.toml");
  const size_t example = text.find("# [tenants.example.credentials");
  ASSERT_NE(example, std::string::npos);
  std::string uncommented = text.substr(0, example);
  std::istringstream rest(text.substr(example));
  for (std::string line; std::getline(rest, line);) {
    if (line.rfind("#", 0) == 0) {
      line.erase(0, line.rfind("# ", 0) == 0 ? 2 : 1);
    }
    uncommented += line + "\n";
  }
  ConfigFiles files;
  ConfigFiles::Write(files.main_path(), uncommented);
  Result<Config> config = LoadShipped(files.main_path());
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  ASSERT_EQ(config->tenants.count("example"), 1u);
  EXPECT_EQ(config->tenants.at("example").credentials.size(), 2u);
}

// Verifies the auth keys: defaults, both forms of api_keys (the plain key hashed at load to the
// same digest as its sha256: form), and CheckAuthListen's loopback rule.
TEST(LoadConfigTest, AuthAndApiKeys) {
  ConfigFiles files;
  Result<Config> defaults = files.Load("");
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->server.auth, AuthMode::kRequired);
  EXPECT_TRUE(defaults->server.metrics_auth);
  EXPECT_EQ(defaults->server.auth_failure_budget, 20);
  EXPECT_EQ(defaults->server.discord_invalid_request_stop, 5000);
  // sha256("acme-api-key-0123456789")
  const std::string hex =
      adapters::ApiKeyDigestText(adapters::ApiKeyDigest("acme-api-key-0123456789"));
  Result<Config> config = files.Load(
      "[server]\nauth = \"off\"\nmetrics_auth = false\nauth_failure_budget = 5\n"
      "discord_invalid_request_stop = 100\n"
      "[tenants.acme]\napi_keys = [\"acme-api-key-0123456789\"]\n"
      "[tenants.globex]\napi_keys = [\"" +
      hex.substr(0, 7) + "ABCDEF" + hex.substr(13) + "\"]\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.auth, AuthMode::kOff);
  EXPECT_FALSE(config->server.metrics_auth);
  EXPECT_EQ(config->server.auth_failure_budget, 5);
  EXPECT_EQ(config->server.discord_invalid_request_stop, 100);
  ASSERT_EQ(config->tenants["acme"].api_key_digests.size(), 1u);
  EXPECT_EQ(config->tenants["acme"].api_key_digests[0],
            adapters::ApiKeyDigest("acme-api-key-0123456789"));
  ASSERT_EQ(config->tenants["globex"].api_key_digests.size(), 1u);
  EXPECT_EQ(adapters::ApiKeyDigestText(config->tenants["globex"].api_key_digests[0]).substr(7, 6),
            "abcdef");

  ServerOptions server;
  server.auth = AuthMode::kOff;
  for (const char* host : {"127.0.0.1", "127.8.9.10", "::1", "localhost"}) {
    server.listen.host = host;
    EXPECT_TRUE(CheckAuthListen(server).ok()) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "example.com", "128.0.0.1"}) {
    server.listen.host = host;
    EXPECT_FALSE(CheckAuthListen(server).ok()) << host;
  }
  server.auth = AuthMode::kRequired;
  EXPECT_TRUE(CheckAuthListen(server).ok());
}

}  // namespace
}  // namespace egress::config
