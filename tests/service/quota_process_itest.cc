// relay-egress serve as a real process with a quota: the count survives SIGKILL and a restart.

#include <signal.h>

#include <fstream>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";

// Verifies that a tier's quota (20 per 10 minutes) takes 20 deliveries, refuses the 21st with
// 429 quota_exceeded, and after kill -9 and a restart still refuses it and still counts 20.
TEST(QuotaProcessTest, CountSurvivesSigkillAndRestart) {
  TempDir dir;
  const std::string config = dir.Sub("relay-egress.toml");
  std::ofstream(config) << "[server]\nadmin_token = \"" << kAdminToken
                        << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir.Sub("store")
                        << "\"\n"
                        << "[platforms.webhook]\nallow_private_networks = true\n"
                        << "[tiers.pro.quotas.burst]\nlimit = 20\nwindow = \"10m\"\n"
                        << "[tenants.acme]\ntier = \"pro\"\n"
                        << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                        << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
  auto start = [&](ChildProcess& p) {
    return p.Start(BuildDir() + "/relay-egress", {"serve", "--config", config, "--profiles-dir",
                                                  SourceDir() + "/config/profiles"});
  };
  const json one = {{"tenant", "acme"},
                    {"platform", "webhook"},
                    // Nothing listens on port 1: every attempt is refused and retried later (5 s,
                    // then minutes), so the deliveries stay counted while the test runs.
                    {"destination", "http://127.0.0.1:1/hooks/q"},
                    {"credential", "hooks"},
                    {"payload", {{"n", 1}}}};
  {
    ChildProcess service;
    const int port = start(service);
    ASSERT_NE(port, 0) << service.error();
    json items = json::array();
    for (int i = 0; i < 20; ++i) {
      items.push_back(one);
    }
    TestResponse batch = HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries/batch",
                                    json{{"deliveries", items}}.dump());
    ASSERT_EQ(batch.status, 202) << batch.body;
    TestResponse over = HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries", one.dump());
    ASSERT_EQ(over.status, 429) << over.body;
    EXPECT_EQ(over.Json()["error"], "quota_exceeded");
    const int status = service.Signal(SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status));
  }
  ChildProcess service;
  const int port = start(service);
  ASSERT_NE(port, 0) << service.error();
  TestResponse over = HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries", one.dump());
  EXPECT_EQ(over.status, 429) << over.body;
  EXPECT_EQ(over.Json()["error"], "quota_exceeded");
  EXPECT_EQ(over.Json()["quota"], "burst");
  const int retry_s = std::stoi(over.Header("Retry-After"));
  EXPECT_GT(retry_s, 0);
  // All 20 went in one slice: they leave the window one slice (1/60 of it) after it at most.
  EXPECT_LE(retry_s, 610);
  TestResponse quotas = HttpCallAs(kAdminToken, port, "GET", "/api/admin/tenants/acme/quotas");
  ASSERT_EQ(quotas.status, 200) << quotas.body;
  EXPECT_EQ(quotas.Json()["quotas"]["burst"]["used"], 20);
  EXPECT_EQ(quotas.Json()["quotas"]["burst"]["window_ms"], 600'000);
  // The CLI reads the same through the running service.
  CommandOutput cli = RunCommand(
      BuildDir() + "/relay-egress",
      {"quotas", "--server", "http://127.0.0.1:" + std::to_string(port), "--token", kAdminToken});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("burst"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("20"), std::string::npos) << cli.out;
  CommandOutput json_out =
      RunCommand(BuildDir() + "/relay-egress",
                 {"quotas", "--tenant", "acme", "--json", "--server",
                  "http://127.0.0.1:" + std::to_string(port), "--token", kAdminToken});
  EXPECT_EQ(json_out.exit_code, 0) << json_out.err;
  EXPECT_EQ(json::parse(json_out.out, nullptr, false)["quotas"]["burst"]["used"], 20)
      << json_out.out;
  const int status = service.Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace egress
