#include <map>
#include <string>

#include <gtest/gtest.h>

#include "config/load_config.h"
#include "tests/config/config_files.h"

namespace egress::config {
namespace {

using pacing::BudgetName;

// Verifies RELAY_EGRESS_<SECTION>_<KEY> reaches nested sections, converts integers, booleans and
// durations from text, skips the reserved variables and wins over the file.
TEST(EnvOverridesTest, OverrideScalarKeysOfEverySection) {
  ConfigFiles files;
  Result<Config> config = files.Load("[server]\nlisten = \"127.0.0.1:8686\"\nmetrics_auth = true\n",
                                     {{"RELAY_EGRESS_SERVER_LISTEN", "127.0.0.1:9999"},
                                      {"RELAY_EGRESS_SERVER_METRICS_AUTH", "false"},
                                      {"RELAY_EGRESS_SERVER_MAX_CONNECTIONS", "77"},
                                      {"RELAY_EGRESS_SERVER_RETENTION_DEAD", "2d"},
                                      {"RELAY_EGRESS_TRANSPORT_MIN_TLS_VERSION", "1.3"},
                                      {"RELAY_EGRESS_PLATFORMS_SLACK_RETRY_MAX_ATTEMPTS", "4"},
                                      {"RELAY_EGRESS_PLATFORMS_LINE_TIMEOUT", "9s"},
                                      {"RELAY_EGRESS_BUDGETS_SLACK_CHANNEL_LIMIT", "5"},
                                      {"RELAY_EGRESS_TOKEN", "a CLI token, not an override"},
                                      {"RELAY_EGRESS_CONFIG", "/not/read/here.toml"},
                                      {"OTHER_SERVER_LISTEN", "not ours"}});
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.listen.ToString(), "127.0.0.1:9999");
  EXPECT_FALSE(config->server.metrics_auth);
  EXPECT_EQ(config->server.max_connections, 77u);
  EXPECT_EQ(config->server.retention.dead, Millis(2 * 86'400'000));
  EXPECT_EQ(config->transport.min_tls_version, adapters::TlsVersion::kTls13);
  EXPECT_EQ(config->platform(Platform::kSlack).retry.max_attempts, 4);
  EXPECT_EQ(config->platform(Platform::kLine).timeout, Millis(9000));
  EXPECT_EQ(config->budget(BudgetName::kSlackChannel).limit, 5);
  EXPECT_EQ(config->sources.back(), "environment");
}

// Verifies each bad override is an InvalidArgument naming the variable and the field.
TEST(EnvOverridesTest, BadOverridesNameTheVariable) {
  const std::pair<std::pair<const char*, const char*>, const char*> cases[] = {
      {{"RELAY_EGRESS_SERVER_MAX_CONNECTIONS", "12abc"},
       "RELAY_EGRESS_SERVER_MAX_CONNECTIONS: server.max_connections: must be an integer from 1 "
       "to "},
      {{"RELAY_EGRESS_SERVER_MAX_CONNECTIONS", ""},
       "RELAY_EGRESS_SERVER_MAX_CONNECTIONS: server.max_connections: must be an integer from 1 "
       "to "},
      {{"RELAY_EGRESS_SERVER_MAX_CONNECTIONS", "99999999999999999999999"},
       "RELAY_EGRESS_SERVER_MAX_CONNECTIONS: server.max_connections: must be an integer from 1 "
       "to "},
      {{"RELAY_EGRESS_SERVER_METRICS_AUTH", "yes"},
       "RELAY_EGRESS_SERVER_METRICS_AUTH: server.metrics_auth: must be true or false"},
      {{"RELAY_EGRESS_SERVER_NOPE", "1"}, "RELAY_EGRESS_SERVER_NOPE: server.nope: unknown key"},
      {{"RELAY_EGRESS_SERVER_LISTEN", "nowhere"}, "RELAY_EGRESS_SERVER_LISTEN: server.listen: "},
      {{"RELAY_EGRESS_SERVER_RETENTION_DEAD", "soon"},
       "RELAY_EGRESS_SERVER_RETENTION_DEAD: server.retention.dead: "},
      {{"RELAY_EGRESS_PLATFORMS_SLACK_RETRY_SCHEDULE", "1s"},
       "RELAY_EGRESS_PLATFORMS_SLACK_RETRY_SCHEDULE: platforms.slack.retry.schedule: must be a "
       "list"},
      {{"RELAY_EGRESS_TENANTS_ACME_WEIGHT", "2"},
       "RELAY_EGRESS_TENANTS_ACME_WEIGHT: names no overridable config section"},
      {{"RELAY_EGRESS_SERVER", "x"}, "RELAY_EGRESS_SERVER: names no overridable config section"},
      {{"RELAY_EGRESS_server_listen", "127.0.0.1:1"},
       "RELAY_EGRESS_server_listen: an override is RELAY_EGRESS_<SECTION>_<KEY> in capitals"},
  };
  ConfigFiles files;
  for (const auto& [var, want] : cases) {
    SCOPED_TRACE(var.first);
    Result<Config> config = files.Load("", {{var.first, var.second}});
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(config.error().message().rfind(want, 0), 0u) << config.error().message();
  }
}

// Verifies a secret given by variable is checked like the file's and never echoed.
TEST(EnvOverridesTest, SecretOverridesAreNeverEchoed) {
  ConfigFiles files;
  Result<Config> config =
      files.Load("", {{"RELAY_EGRESS_SERVER_ADMIN_TOKEN", "env-admin-token-0123456789"}});
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.admin_token, "env-admin-token-0123456789");
  Result<Config> bad = files.Load("", {{"RELAY_EGRESS_SERVER_MAX_PAYLOAD_BYTES", "s3cr3t-value"}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message().find("s3cr3t-value"), std::string::npos);
}

// Verifies RenderConfig merges the layers (file, then variables), shows the override and hides
// every secret: admin token (file and variable), API keys, credential tokens and secrets, the
// Redis password in redis_url.
TEST(RenderConfigTest, MergesLayersAndRedactsSecrets) {
  ConfigFiles files;
  files.WriteProfile("slack", "[budgets.slack_channel]\nlimit = 2\n");
  ConfigFiles::Write(files.main_path(),
                     "[server]\nlisten = \"127.0.0.1:8686\"\nadmin_token = \"file-admin-secret\"\n"
                     "[tenants.acme]\napi_keys = [\"acme-api-key-secret\"]\n"
                     "[tenants.acme.credentials.bot]\nplatform = \"slack\"\n"
                     "token = \"xoxb-token-secret\"\n"
                     "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                     "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
                     // A password with '/' and '?' (the parser reads up to the last '@').
                     "[cluster]\nredis_url = \"redis://:redis/pass?word@127.0.0.1:6379/2\"\n");
  Result<std::string> text = RenderConfig(
      files.main_path(), files.Options({{"RELAY_EGRESS_SERVER_LISTEN", "127.0.0.1:7000"},
                                        {"RELAY_EGRESS_ADMIN_TOKEN", "env-admin-secret"}}));
  ASSERT_TRUE(text.has_value()) << text.error().ToString();
  EXPECT_NE(text->find("listen = '127.0.0.1:7000'"), std::string::npos) << *text;
  EXPECT_NE(text->find("limit = 2"), std::string::npos) << *text;
  EXPECT_NE(text->find("redis://(redacted)@127.0.0.1:6379/2"), std::string::npos) << *text;
  EXPECT_NE(text->find("(redacted)"), std::string::npos) << *text;
  for (const char* secret :
       {"file-admin-secret", "env-admin-secret", "acme-api-key-secret", "xoxb-token-secret",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "redis/pass", "pass?word"}) {
    EXPECT_EQ(text->find(secret), std::string::npos) << secret << " in\n" << *text;
  }
  // The same errors as LoadConfig.
  Result<std::string> bad =
      RenderConfig(files.main_path(), files.Options({{"RELAY_EGRESS_SERVER_NOPE", "1"}}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "RELAY_EGRESS_SERVER_NOPE: server.nope: unknown key");
}

}  // namespace
}  // namespace egress::config
