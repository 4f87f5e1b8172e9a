// relay-egress serve as a real process: SIGKILL under load then restart loses nothing that was
// accepted; SIGTERM drains and exits 0.

#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";

class ServeProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sim_port_ = sim_.Start(BuildDir() + "/relay-egress-sim", {"--port", "0"});
    ASSERT_NE(sim_port_, 0) << sim_.error();
    config_ = dir_.Sub("relay-egress.toml");
    std::ofstream(config_) << "[server]\nadmin_token = \"" << kAdminToken
                           << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub("store")
                           << "\"\n"
                           << "[platforms.webhook]\nallow_private_networks = true\n"
                           << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
  }

  int StartService(ChildProcess& p) {
    return p.Start(BuildDir() + "/relay-egress", {"serve", "--config", config_, "--profiles-dir",
                                                  SourceDir() + "/config/profiles"});
  }

  json Batch(int from, int n) {
    json items = json::array();
    for (int i = from; i < from + n; ++i) {
      items.push_back(
          {{"tenant", "acme"},
           {"platform", "webhook"},
           {"destination", "http://127.0.0.1:" + std::to_string(sim_port_) + "/hooks/crash"},
           {"credential", "hooks"},
           {"payload", {{"n", i}}}});
    }
    return {{"deliveries", items}};
  }

  TempDir dir_;
  ChildProcess sim_;
  int sim_port_ = 0;
  std::string config_;
};

// Verifies that killing the service mid-run and restarting it delivers every accepted delivery.
TEST_F(ServeProcessTest, SigkillThenRestartLosesNothingAccepted) {
  HttpCall(sim_port_, "POST", "/_sim/config",
           R"({"hooks":{"crash":{"rate_per_s":300,"burst":20}}})");
  int accepted = 0;
  {
    ChildProcess service;
    const int port = StartService(service);
    ASSERT_NE(port, 0) << service.error();
    for (int b = 0; b < 3; ++b) {
      TestResponse r =
          HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries/batch", Batch(b * 100, 100).dump());
      ASSERT_EQ(r.status, 202) << r.body;
      accepted += static_cast<int>(r.Json()["results"].size());
    }
    const int status = service.Signal(SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status));
  }
  ChildProcess service;
  const int port = StartService(service);
  ASSERT_NE(port, 0) << service.error();
  json stats;
  for (int waited = 0; waited < 30'000; waited += 50) {
    stats = HttpCallAs(kAdminToken, port, "GET", "/v1/stats").Json();
    if (stats.is_object() && stats["delivered"] == accepted) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(stats["delivered"], accepted) << stats.dump();
  json sim = HttpCall(sim_port_, "GET", "/_sim/stats").Json();
  EXPECT_EQ(sim["totals"]["accepted"], accepted) << sim.dump();  // distinct webhook-ids
  const int status = service.Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace egress
