// The secret scan of issue #14: known tokens, webhook secrets and API keys are registered (in the
// config, by reference, and through the admin API), traffic flows over the simulator (a delivery, a
// 410 that disables its destination, a Discord webhook, an SSRF refusal, a call to the service's
// own address), then the event log, /metrics, every API answer, `deliveries show` and the raw bytes
// of every file under data_dir are searched: none holds a secret.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "adapters/api_key.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Credentials: must appear nowhere, data_dir's raw bytes included.
constexpr char kHookSecret[] = "whsec_c2VjcmV0LXNjYW4taG9vay1zZWNyZXQtMDEyMzQ1";  // by file
constexpr char kDiscordBot[] = "DiscordBotTokenSECRETSCAN.0123456789abcdef";      // by env
constexpr char kRegisteredToken[] = "xoxb-REGISTERED-SECRETSCAN-0123456789";
constexpr char kRegisteredSecret[] = "whsec_cmVnaXN0ZXJlZC1zZWNyZXQtc2Nhbi0wMTIzNDU2Nzg5";
constexpr char kAdminToken[] = "operator-SECRETSCAN-admin-token-0123456789";
// API keys: acme's in the config, beta's put through the admin API (stored as a digest, sealed).
constexpr char kAcmeApiKey[] = "acme-SECRETSCAN-api-key-0123456789abcdef";
constexpr char kBetaApiKey[] = "beta-SECRETSCAN-api-key-fedcba9876543210";
// Secrets carried in destinations: stored in delivery records (needed to send), never shown.
constexpr char kDiscordWebhookToken[] = "DiscordWebhookTokenSECRETSCAN-abcdef0123";
constexpr char kQuerySecret[] = "QuerySECRETSCANvalue0123";
// Issue #37: a quote before a URL's secrets hid them from the redaction and the seal.
constexpr char kQuoteQuerySecret[] = "QuoteQuerySECRETSCAN0123";
constexpr char kQuotePassword[] = "QuotePasswordSECRETSCAN0123";
// A secret in a path segment, Telegram's shape: /bot<id>:<token>.
constexpr char kBotPathToken[] = "BotPathTokenSECRETSCAN-0123456789";
// In a URL that intake refuses (a double quote): it must not be echoed in the 422.
constexpr char kRefusedSecret[] = "RefusedUrlSECRETSCAN0123";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The secret and a distinctive piece of it (its middle 12 bytes).
std::vector<std::string> Needles(const std::string& secret) {
  return {secret, secret.substr(secret.size() / 2 - 6, 12)};
}

class SecretScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sim_port_ = sim_.Start(BuildDir() + "/relay-egress-sim", {"--port", "0"});
    ASSERT_NE(sim_port_, 0) << sim_.error();
    HttpCall(sim_port_, "POST", "/_sim/config", R"({"hooks":{"gone":{"faults":{"status":410}}}})");
    const std::string sim = "http://127.0.0.1:" + std::to_string(sim_port_);
    std::ofstream(dir_.Sub("hook.secret")) << kHookSecret << "\n";
    config_ = dir_.Sub("relay-egress.toml");
    std::ofstream(config_) << "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << DataDir()
                           << "\"\nadmin_token = \"" << kAdminToken << "\"\nlog_format = \"json\"\n"
                           << "[platforms.discord]\nbase_url = \"" << sim << "\"\n"
                           << "[platforms.slack]\nbase_url = \"" << sim << "\"\n"
                           << "[tenants.acme]\nallow_private_networks = true\n"
                           << "api_keys = [\"" << kAcmeApiKey << "\"]\n"
                           << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret_file = \"" << dir_.Sub("hook.secret") << "\"\n"
                           << "[tenants.acme.credentials.bot]\nplatform = \"discord\"\n"
                           << "token_env = \"EGRESS_SCAN_DISCORD_TOKEN\"\n"
                           << "[tenants.beta.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret_file = \"" << dir_.Sub("hook.secret") << "\"\n";
    ::setenv("EGRESS_SCAN_DISCORD_TOKEN", kDiscordBot, 1);
    // The event log (stderr) goes to a file through the shell.
    port_ = service_.Start("/bin/sh", {"-c",
                                       "exec \"$0\" serve --config \"$1\" --profiles-dir "
                                       "\"$2\" 2>\"$3\"",
                                       BuildDir() + "/relay-egress", config_,
                                       SourceDir() + "/config/profiles", dir_.Sub("events.log")});
    ::unsetenv("EGRESS_SCAN_DISCORD_TOKEN");
    ASSERT_NE(port_, 0) << service_.error();
  }

  std::string DataDir() const { return dir_.Sub("data"); }

  // Calls the API with `token` (acme's key unless told) and keeps the answer for the scan.
  TestResponse Call(const std::string& method, const std::string& target,
                    const std::string& body = "", const std::string& token = kAcmeApiKey) {
    TestResponse r = HttpCallAs(token, port_, method, target, body);
    answers_ += target + " " + std::to_string(r.status) + " " + r.body + "\n";
    for (const auto& [name, value] : r.headers) {
      answers_ += name + ": " + value + "\n";
    }
    return r;
  }

  std::string Post(const json& delivery) {
    TestResponse r = Call("POST", "/v1/deliveries", delivery.dump(),
                          delivery.value("tenant", "") == "beta" ? kBetaApiKey : kAcmeApiKey);
    EXPECT_EQ(r.status, 202) << r.body;
    return r.Json().value("id", "");
  }

  // The delivery once it is no longer queued or in flight (bounded wait for liveness).
  json Settled(const std::string& id) {
    if (id.empty()) {
      ADD_FAILURE() << "no delivery to wait for";
      return json::object();
    }
    json d;
    for (int waited = 0; waited < 30'000; waited += 50) {
      d = Call("GET", "/v1/deliveries/" + id, "", kAdminToken).Json();
      const std::string state = d.is_object() ? d.value("state", "") : "";
      if (state == "delivered" || state == "dead" ||
          (state == "deferred" && d.value("reason", "").starts_with("destination_disabled"))) {
        return d;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "not settled: " << d.dump();
    return d;
  }

  TempDir dir_;
  ChildProcess sim_;
  ChildProcess service_;
  int sim_port_ = 0;
  int port_ = 0;
  std::string config_;
  std::string answers_;
};

// Verifies no secret reaches logs, metrics, API answers, the CLI or (for credentials) data_dir.
TEST_F(SecretScanTest, NoSecretLeavesAnywhere) {
  const std::string sim = "http://127.0.0.1:" + std::to_string(sim_port_);
  ASSERT_EQ(Call("PUT", "/api/admin/tenants/acme/credentials/reg",
                 json{{"platform", "slack"}, {"token", kRegisteredToken}}.dump(), kAdminToken)
                .status,
            200);
  ASSERT_EQ(Call("PUT", "/api/admin/tenants/acme/credentials/signer",
                 json{{"platform", "webhook"}, {"secret", kRegisteredSecret}}.dump(), kAdminToken)
                .status,
            200);
  ASSERT_EQ(Call("PUT", "/api/admin/tenants/beta/api_keys",
                 json{{"api_keys", {kBetaApiKey}}}.dump(), kAdminToken)
                .status,
            200);
  std::vector<std::string> ids;
  // Delivered, with a secret in the URL's query.
  ids.push_back(Post({{"tenant", "acme"},
                      {"platform", "webhook"},
                      {"destination", sim + "/hooks/ok?sig=" + kQuerySecret},
                      {"credential", "signer"},
                      {"payload", {{"n", 1}}}}));
  // 410: the destination is disabled, its delivery deferred.
  ids.push_back(Post({{"tenant", "acme"},
                      {"platform", "webhook"},
                      {"destination", sim + "/hooks/gone"},
                      {"credential", "hooks"},
                      {"payload", {{"n", 2}}}}));
  // A Discord webhook: its token is in the destination.
  ids.push_back(Post({{"tenant", "acme"},
                      {"platform", "discord"},
                      {"destination", std::string("webhooks/123456/") + kDiscordWebhookToken},
                      {"credential", "bot"},
                      {"payload", {{"content", "hi"}}}}));
  // Slack with the registered token.
  ids.push_back(Post({{"tenant", "acme"},
                      {"platform", "slack"},
                      {"destination", "C0SECRETSCAN"},
                      {"credential", "reg"},
                      {"payload", {{"text", "hi"}}}}));
  // A single quote before the query, and inside the userinfo (RFC 3986 sub-delimiters: accepted,
  // sent as they are, and redacted and sealed as URLs).
  ids.push_back(Post({{"tenant", "acme"},
                      {"platform", "webhook"},
                      {"destination", sim + "/hooks/q'?sig=" + kQuoteQuerySecret},
                      {"credential", "signer"},
                      {"payload", {{"n", 5}}}}));
  ids.push_back(Post({{"tenant", "acme"},
                      {"platform", "webhook"},
                      {"destination", "http://u'ser:" + std::string(kQuotePassword) +
                                          "@127.0.0.1:" + std::to_string(sim_port_) + "/hooks/ok"},
                      {"credential", "signer"},
                      {"payload", {{"n", 6}}}}));
  ids.push_back(Post({{"tenant", "acme"},
                      {"platform", "webhook"},
                      {"destination", sim + "/hooks/bot123456:" + kBotPathToken},
                      {"credential", "signer"},
                      {"payload", {{"n", 7}}}}));
  for (const std::string bad : {"\"", "<", ">", "`"}) {
    TestResponse r = Call("POST", "/v1/deliveries",
                          json{{"tenant", "acme"},
                               {"platform", "webhook"},
                               {"destination", sim + "/hooks/x" + bad + "?sig=" + kRefusedSecret},
                               {"credential", "signer"},
                               {"payload", {{"n", 8}}}}
                              .dump());
    EXPECT_EQ(r.status, 422) << bad << " " << r.body;
    EXPECT_EQ(r.Json().value("error", ""), "invalid_destination") << r.body;
  }
  // SSRF: beta has no private-network policy, the simulator is on loopback.
  const std::string refused = Post({{"tenant", "beta"},
                                    {"platform", "webhook"},
                                    {"destination", sim + "/hooks/ok"},
                                    {"credential", "hooks"},
                                    {"payload", {{"n", 3}}}});
  // The service's own address: refused even for acme, which may reach loopback.
  const std::string own =
      Post({{"tenant", "acme"},
            {"platform", "webhook"},
            {"destination", "http://127.0.0.1:" + std::to_string(port_) + "/v1/stats"},
            {"credential", "hooks"},
            {"payload", {{"n", 4}}}});
  for (const std::string& id : ids) {
    Settled(id);
  }
  json ssrf = Settled(refused);
  EXPECT_EQ(ssrf["state"], "dead") << ssrf.dump();
  ASSERT_FALSE(ssrf["attempts_history"].empty()) << ssrf.dump();
  EXPECT_EQ(ssrf["attempts_history"].back()["platform_error"], "destination_not_allowed");
  EXPECT_EQ(ssrf["attempts_history"].back()["detail"], "destination_not_allowed: loopback address");
  json self = Settled(own);
  ASSERT_FALSE(self["attempts_history"].empty()) << self.dump();
  EXPECT_EQ(self["attempts_history"].back()["detail"], "destination_not_allowed: service address");
  json discord = Call("GET", "/v1/deliveries/" + ids[2]).Json();
  ASSERT_TRUE(discord.is_object()) << discord.dump();
  EXPECT_EQ(discord["destination"], "webhooks/123456/…") << discord.dump();
  // The receiver got each URL with a quote as it was written.
  for (size_t i = 4; i < 7; ++i) {
    json d = Call("GET", "/v1/deliveries/" + ids[i]).Json();
    EXPECT_EQ(d["state"], "delivered") << d.dump();
  }
  EXPECT_EQ(Call("GET", "/v1/deliveries/" + ids[5]).Json()["destination"],
            "http://…@127.0.0.1:" + std::to_string(sim_port_) + "/hooks/ok");
  ids.push_back(refused);
  ids.push_back(own);
  json gone = Call("GET", "/v1/deliveries/" + ids[1]).Json();
  EXPECT_EQ(gone["state"], "deferred") << gone.dump();

  // Every read route.
  Call("GET", "/v1/deliveries?limit=1000");
  Call("GET", "/v1/deliveries?state=dead");
  Call("GET", "/v1/destinations");
  Call("GET", "/v1/stats");
  Call("GET", "/v1/deliveries/" + refused, "", kBetaApiKey);
  Call("GET", "/v1/destinations", "", kBetaApiKey);
  Call("GET", "/v1/deliveries?limit=1000", "", kAdminToken);
  Call("GET", "/v1/destinations", "", kAdminToken);
  Call("GET", "/metrics", "", kAdminToken);
  Call("GET", "/api/admin/tenants/acme/rate_limits", "", kAdminToken);
  // Refused keys: the answer names neither the key nor the digest.
  Call("GET", "/v1/deliveries", "", std::string(kAcmeApiKey) + "x");
  std::string cli;
  for (const std::string& id : ids) {
    CommandOutput out =
        RunCommand(BuildDir() + "/relay-egress",
                   {"deliveries", "show", id, "--server",
                    "http://127.0.0.1:" + std::to_string(port_), "--token", kAdminToken});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    cli += out.out + out.err;
  }
  for (const char* args : {"destinations", "stats"}) {
    CommandOutput out = RunCommand(
        BuildDir() + "/relay-egress",
        {args, "--server", "http://127.0.0.1:" + std::to_string(port_), "--token", kAcmeApiKey});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    cli += out.out + out.err;
  }
  // SIGHUP re-reads the references; then a clean stop flushes the log and the store.
  ASSERT_EQ(::kill(service_.pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  service_.Signal(SIGTERM);
  const std::string log = ReadAll(dir_.Sub("events.log"));
  EXPECT_NE(log.find("destination_disabled"), std::string::npos) << log;
  EXPECT_NE(log.find("credentials_reloaded"), std::string::npos) << log;
  EXPECT_NE(log.find("secrets_key_generated"), std::string::npos) << log;
  const std::string files = AllFileBytes(DataDir());
  struct stat st {};
  ASSERT_EQ(::stat(DataDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((DataDir() + "/secrets.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const std::vector<std::pair<std::string, const std::string*>> places = {
      {"event log", &log}, {"API answers", &answers_}, {"CLI", &cli}};
  // API keys and their digests (the hex the store keeps, sealed) are secrets too.
  const std::string acme_digest = adapters::ApiKeyDigestText(adapters::ApiKeyDigest(kAcmeApiKey));
  const std::string beta_digest = adapters::ApiKeyDigestText(adapters::ApiKeyDigest(kBetaApiKey));
  const std::vector<std::string> api_secrets = {kAcmeApiKey,
                                                kBetaApiKey,
                                                acme_digest.substr(7),
                                                beta_digest.substr(7),
                                                adapters::ApiKeyDigest(kAcmeApiKey),
                                                adapters::ApiKeyDigest(kBetaApiKey)};
  for (const std::string& secret : api_secrets) {
    for (const std::string& needle : Needles(secret)) {
      for (const auto& [where, text] : places) {
        EXPECT_EQ(text->find(needle), std::string::npos) << needle << " in " << where;
      }
      EXPECT_EQ(files.find(needle), std::string::npos) << needle << " in data_dir";
    }
  }
  for (const char* secret : {kHookSecret, kDiscordBot, kRegisteredToken, kRegisteredSecret,
                             kAdminToken, kDiscordWebhookToken, kQuerySecret, kQuoteQuerySecret,
                             kQuotePassword, kBotPathToken, kRefusedSecret}) {
    for (const std::string& needle : Needles(secret)) {
      for (const auto& [where, text] : places) {
        EXPECT_EQ(text->find(needle), std::string::npos) << needle << " in " << where;
      }
      // Credentials and secret destinations are sealed at rest (docs/security.md).
      EXPECT_EQ(files.find(needle), std::string::npos) << needle << " in data_dir";
    }
  }
}

}  // namespace
}  // namespace egress
