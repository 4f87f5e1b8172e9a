#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "config/load_config.h"
#include "dispatcher/service/service_options_from_config.h"
#include "tests/config/config_files.h"

namespace egress::config {
namespace {

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// Verifies credentials by reference are read at load and keep their reference for SIGHUP.
TEST(TenantSecurityConfigTest, ReadsCredentialReferences) {
  ConfigFiles files;
  ConfigFiles::Write(files.dir().Sub("bot.token"), "xoxb-FROMFILE\n");
  ConfigFiles::Write(files.dir().Sub("hook.secret"), std::string(kSecret) + "\n");
  ::setenv("EGRESS_TEST_LINE_TOKEN", "line-FROMENV", 1);
  Result<Config> config = files.Load(
      "[tenants.acme.credentials.bot]\nplatform = \"slack\"\ntoken_file = \"" +
      files.dir().Sub("bot.token") +
      "\"\n[tenants.acme.credentials.line]\nplatform = \"line\"\ntoken_env = "
      "\"EGRESS_TEST_LINE_TOKEN\"\n[tenants.acme.credentials.hook]\nplatform = \"webhook\"\n"
      "secret_file = \"" +
      files.dir().Sub("hook.secret") + "\"\n");
  ::unsetenv("EGRESS_TEST_LINE_TOKEN");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const TenantConfig& acme = config->tenants.at("acme");
  EXPECT_EQ(acme.credentials.at("bot").token, "xoxb-FROMFILE");
  EXPECT_EQ(acme.credentials.at("line").token, "line-FROMENV");
  ASSERT_EQ(acme.credentials.at("hook").secrets.size(), 1u);
  EXPECT_EQ(acme.credentials.at("hook").secrets[0], kSecret);
  EXPECT_EQ(acme.credential_refs.size(), 3u);
  service::ServiceOptions o = service::ServiceOptionsFromConfig(*config);
  EXPECT_EQ(o.credential_refs.size(), 3u);
}

// Verifies exactly one of value, file and env, and errors naming the reference, not the value.
TEST(TenantSecurityConfigTest, RefusesAmbiguousOrBrokenReferences) {
  ConfigFiles files;
  ConfigFiles::Write(files.dir().Sub("bad.token"), "xoxb-SECRET\nVALUE\n");
  struct Case {
    std::string text;
    std::string error;  // a part of the message
  };
  const Case cases[] = {
      {"[tenants.a.credentials.b]\nplatform = \"slack\"\ntoken = \"x\"\ntoken_file = \"/f\"\n",
       "set exactly one of token, token_file or token_env"},
      {"[tenants.a.credentials.b]\nplatform = \"slack\"\ntoken_env = \"A\"\ntoken_file = \"/f\"\n",
       "set token_file or token_env, not both"},
      {"[tenants.a.credentials.b]\nplatform = \"webhook\"\nsecret = \"" + std::string(kSecret) +
           "\"\nsecret_env = \"X\"\n",
       "set exactly one of secret, secrets, secret_file or secret_env"},
      {"[tenants.a.credentials.b]\nplatform = \"webhook\"\ntoken_file = \"/f\"\n", "not a token"},
      {"[tenants.a.credentials.b]\nplatform = \"slack\"\nsecret_file = \"/f\"\n",
       "not a signing secret"},
      {"[tenants.a.credentials.b]\nplatform = \"slack\"\ntoken_file = \"\"\n", "must not be empty"},
      {"[tenants.a.credentials.b]\nplatform = \"slack\"\ntoken_file = \"" +
           files.dir().Sub("nope") + "\"\n",
       "file " + files.dir().Sub("nope") + ": no such file"},
      {"[tenants.a.credentials.b]\nplatform = \"slack\"\ntoken_env = \"EGRESS_TEST_NOT_SET\"\n",
       "variable EGRESS_TEST_NOT_SET: not set"},
      {"[tenants.a.credentials.b]\nplatform = \"slack\"\ntoken_file = \"" +
           files.dir().Sub("bad.token") + "\"\n",
       "<redacted>"},
  };
  ::unsetenv("EGRESS_TEST_NOT_SET");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<Config> config = files.Load(c.text);
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(config.error().message().find(c.error), std::string::npos)
        << config.error().message();
    EXPECT_EQ(config.error().message().find("SECRET"), std::string::npos);
  }
}

// Verifies the per-tenant network policy keys and their mapping onto per-tenant SSRF policies.
TEST(TenantSecurityConfigTest, ReadsPerTenantNetworkPolicy) {
  ConfigFiles files;
  Result<Config> config = files.Load(
      "[tenants.acme]\nallowed_cidrs = [\"10.20.0.0/16\", \"fd00:1::/32\"]\n"
      "[tenants.lab]\nallow_private_networks = true\n[tenants.plain]\nweight = 2\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->tenants.at("acme").allowed_cidrs.size(), 2u);
  EXPECT_FALSE(config->tenants.at("acme").allow_private_networks.has_value());
  EXPECT_EQ(config->tenants.at("lab").allow_private_networks, true);
  service::ServiceOptions o = service::ServiceOptionsFromConfig(*config);
  const adapters::PlatformEndpoints& e = o.endpoints;
  EXPECT_EQ(e.tenant_webhook_ssrf.size(), 2u);
  EXPECT_FALSE(e.WebhookSsrfFor("plain").allow_private_networks);
  EXPECT_TRUE(e.WebhookSsrfFor("lab").allow_private_networks);
  EXPECT_TRUE(adapters::CheckDestination("10.20.1.1", e.WebhookSsrfFor("acme")).ok());
  EXPECT_FALSE(adapters::CheckDestination("10.20.1.1", e.WebhookSsrfFor("plain")).ok());
  EXPECT_FALSE(adapters::CheckDestination("10.21.1.1", e.WebhookSsrfFor("acme")).ok());
}

// Verifies hostile network policy values are typed errors naming the field.
TEST(TenantSecurityConfigTest, RefusesBadNetworkPolicy) {
  ConfigFiles files;
  struct Case {
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      {"[tenants.a]\nallowed_cidrs = \"10.0.0.0/8\"\n", "tenants.a.allowed_cidrs: must be a list"},
      {"[tenants.a]\nallowed_cidrs = [1]\n", "tenants.a.allowed_cidrs[0]: must be a string"},
      {"[tenants.a]\nallowed_cidrs = [\"10.0.0.0/8\", \"10.1.0.0/8\"]\n",
       "tenants.a.allowed_cidrs[1]: address bits are set past the prefix"},
      {"[tenants.a]\nallowed_cidrs = [\"example.com/8\"]\n", "not an IP address"},
      {"[tenants.a]\nallow_private_networks = \"yes\"\n",
       "tenants.a.allow_private_networks: must be true or false"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<Config> config = files.Load(c.text);
    ASSERT_FALSE(config.has_value());
    EXPECT_NE(config.error().message().find(c.error), std::string::npos)
        << config.error().message();
  }
}

// Verifies the secrets key settings: the file key and the environment variable.
TEST(TenantSecurityConfigTest, ReadsSecretsKeySources) {
  ConfigFiles files;
  Result<Config> config =
      files.Load("[server]\nsecrets_key_file = \"/k\"\n", {{"RELAY_EGRESS_SECRETS_KEY", "abc"}});
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.secrets_key_file, "/k");
  EXPECT_EQ(config->server.secrets_key_env, "abc");
}

}  // namespace
}  // namespace egress::config
