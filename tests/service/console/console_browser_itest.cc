// The operator console in a real browser (docs/console.md): `relay-egress serve` and the
// simulator as child processes, headless Chromium (Debian's chromium and chromium-driver)
// driven by Debian's python3-selenium through console_browser.py, which checks the page and
// saves a screenshot of each page under build/console-screenshots/.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/run_command.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "console-admin-token-0123456789";
constexpr char kAcmeKey[] = "acme-console-key-0123456789";
constexpr char kBetaKey[] = "beta-console-key-0123456789";
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
// Dead deliveries: one replayed from its drawer, the rest by the bulk replay.
constexpr int kDead = 4;

class ConsoleBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"}) {
      ASSERT_EQ(access(tool, X_OK), 0)
          << tool << " is missing: ./dev install (chromium, chromium-driver, python3-selenium)";
    }
    ASSERT_TRUE(sim_.Start(SimWire::kHttp).ok());
    // "rejecting" answers 400 (dead, http_400) until the test clears its fault; "throttled"
    // answers 429 with an hour's Retry-After.
    json patch = {{"hooks",
                   {{"rejecting", {{"faults", {{"status", 400}}}}},
                    {"throttled", {{"faults", {{"status", 429}, {"retry_after_s", 3600}}}}}}}};
    ASSERT_FALSE(sim_.Configure(patch).contains("error"));
    const std::string config = dir_.Sub("relay-egress.toml");
    std::ofstream out(config);
    out << "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub("store")
        << "\"\nadmin_token = \"" << kAdminToken << "\"\n"
        << "[platforms.webhook]\nallow_private_networks = true\n";
    for (auto [tenant, key] : {std::pair{"acme", kAcmeKey}, std::pair{"beta", kBetaKey}}) {
      out << "[tenants." << tenant << "]\napi_keys = [\"" << key << "\"]\n"
          << "[tenants." << tenant << ".credentials.hooks]\nplatform = \"webhook\"\nsecret = \""
          << kSecret << "\"\n";
    }
    out.close();
    port_ = service_.Start(
        BuildDir() + "/relay-egress",
        {"serve", "--config", config, "--profiles-dir", SourceDir() + "/config/profiles"});
    ASSERT_NE(port_, 0) << service_.error();
  }

  std::string Post(const std::string& tenant, const std::string& hook) {
    json body = {{"tenant", tenant},
                 {"platform", "webhook"},
                 {"destination", sim_.BaseUrl() + "/hooks/" + hook},
                 {"credential", "hooks"},
                 {"payload", {{"event", "message.created"}, {"hook", hook}}}};
    TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries", body.dump());
    EXPECT_EQ(r.status, 202) << r.body;
    return r.Json().value("id", "");
  }

  // Polls `target` with the admin token until `done` holds for its JSON (about 60 s at most,
  // counted in sleeps: a deadline for liveness only).
  template <class Done>
  bool WaitFor(const std::string& target, Done done) {
    for (int i = 0; i < 600; ++i) {
      TestResponse r = HttpCallAs(kAdminToken, port_, "GET", target);
      if (r.status == 200 && done(r.Json())) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  TempDir dir_;
  SimProcess sim_;
  ChildProcess service_;
  int port_ = 0;
};

// Verifies the console's done-when list in Chromium: the destinations table shows the
// throttled destination with its reason; a dead delivery replayed from its drawer shows
// delivered; the bulk replay counts first and follows its job; a budget the service refuses is
// shown inline; a tenant key sees none of another tenant's rows; no CSP violation; a screenshot
// of each page under the build folder.
TEST_F(ConsoleBrowserTest, OperatorWorkflows) {
  std::vector<std::string> dead;
  for (int i = 0; i < kDead; ++i) {
    dead.push_back(Post("acme", "rejecting"));
  }
  Post("acme", "throttled");
  for (int i = 0; i < 3; ++i) {
    Post("acme", "fine");
  }
  std::vector<std::string> beta;
  for (int i = 0; i < 3; ++i) {
    beta.push_back(Post("beta", "beta-receiver"));
  }
  ASSERT_TRUE(WaitFor("/v1/deliveries?state=dead&tenant=acme", [&](const json& j) {
    return j["deliveries"].size() == static_cast<size_t>(kDead);
  }));
  ASSERT_TRUE(WaitFor("/v1/destinations?tenant=acme", [](const json& j) {
    for (const json& d : j["destinations"]) {
      if (d["destination"].get<std::string>().ends_with("/hooks/throttled") &&
          d.value("deferral", "").starts_with("retry_after")) {
        return true;
      }
    }
    return false;
  })) << HttpCallAs(kAdminToken, port_, "GET", "/v1/destinations").body;
  // From now on the receiver takes what it refused: a replay is delivered.
  ASSERT_FALSE(sim_.Configure({{"hooks", {{"rejecting", nullptr}}}}).contains("error"));

  const std::string shots = BuildDir() + "/console-screenshots";
  std::filesystem::remove_all(shots);  // only this run's screenshots count below
  CommandOutput run =
      RunCommand("/usr/bin/python3", {SourceDir() + "/tests/service/console/console_browser.py",
                                      "--base",
                                      "http://127.0.0.1:" + std::to_string(port_),
                                      "--admin-token",
                                      kAdminToken,
                                      "--tenant-key",
                                      kBetaKey,
                                      "--tenant-id",
                                      beta[0],
                                      "--dead-id",
                                      dead[0],
                                      "--dead-count",
                                      std::to_string(kDead),
                                      "--throttled",
                                      "/hooks/throttled",
                                      "--traffic-to",
                                      sim_.BaseUrl() + "/hooks/fine",
                                      "--shots",
                                      shots,
                                      "--profile",
                                      dir_.Sub("chromium")});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  std::cout << run.out;

  // What the browser did reached the service.
  TestResponse shown = HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries/" + dead[0]);
  EXPECT_EQ(shown.Json().value("state", ""), "delivered") << shown.body;
  EXPECT_TRUE(WaitFor("/v1/deliveries?state=dead&tenant=acme",
                      [](const json& j) { return j["deliveries"].empty(); }));
  for (const char* page : {"overview", "destinations", "deliveries", "budgets",
                           "destinations-paused", "pauses", "tenant-deliveries", "narrow"}) {
    EXPECT_EQ(access((shots + "/" + page + ".png").c_str(), R_OK), 0) << page;
  }
}

}  // namespace
}  // namespace egress
