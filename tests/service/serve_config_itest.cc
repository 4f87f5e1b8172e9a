// Config values reaching a running `relay-egress serve` (a real process, its config from a file):
// a platform's timeout ends every attempt of that platform, and the listen address may be a name
// that the service, the CLI and --check-config all accept.

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/loopback_http_server.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

class ServeConfigTest : public ::testing::Test {
 protected:
  // Writes the config file: `server` goes under [server], `webhook` under [platforms.webhook]
  // (which always lets destinations be on loopback), plus one tenant with a webhook credential.
  void WriteConfig(const std::string& server, const std::string& webhook) {
    std::ofstream(config_) << "[server]\nadmin_token = \"" << kAdminToken << "\"\n"
                           << server << "data_dir = \"" << dir_.Sub("store") << "\"\n"
                           << "[platforms.webhook]\nallow_private_networks = true\n"
                           << webhook << "[tenants.acme.credentials.hooks]\n"
                           << "platform = \"webhook\"\nsecret = \"" << kSecret << "\"\n";
  }

  int StartService(ChildProcess& p, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"serve", "--config", config_, "--profiles-dir",
                                     SourceDir() + "/config/profiles"};
    args.insert(args.end(), extra.begin(), extra.end());
    return p.Start(BuildDir() + "/relay-egress", args);
  }

  // Polls GET /v1/deliveries/{id} until it has an attempt (bounded: a failed wait fails the test).
  json WaitForFirstAttempt(int port, const std::string& id) {
    json record;
    for (int waited = 0; waited < 15'000; waited += 50) {
      record = HttpCallAs(kAdminToken, port, "GET", "/v1/deliveries/" + id).Json();
      if (record.is_object() && record["attempts_history"].is_array() &&
          !record["attempts_history"].empty()) {
        return record;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no attempt recorded; last record: " << record.dump();
    return record;
  }

  TempDir dir_;
  std::string config_ = dir_.Sub("relay-egress.toml");
};

// Verifies `timeout = "1s"` in [platforms.webhook] ends an attempt against a receiver that
// answers after 3 s at about 1 s, as a timeout that is retried (the delivery is not dead).
TEST_F(ServeConfigTest, PlatformTimeoutEndsSlowAttempt) {
  LoopbackHttpServer receiver([](const LoopbackHttpServer::Request&) {
    LoopbackHttpServer::Response response;
    response.delay = std::chrono::seconds(3);
    return response;
  });
  WriteConfig("listen = \"127.0.0.1:0\"\n", "timeout = \"1s\"\nconnect_timeout = \"1s\"\n");
  ChildProcess service;
  const int port = StartService(service);
  ASSERT_NE(port, 0) << service.error();
  const json delivery = {{"tenant", "acme"},
                         {"platform", "webhook"},
                         {"destination", receiver.Url("/slow")},
                         {"credential", "hooks"},
                         {"payload", {{"event", "slow"}}}};
  TestResponse accepted = HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries", delivery.dump());
  ASSERT_EQ(accepted.status, 202) << accepted.body;
  const json record = WaitForFirstAttempt(port, accepted.Json()["id"].get<std::string>());
  ASSERT_FALSE(record["attempts_history"].empty());
  const json& attempt = record["attempts_history"][0];
  EXPECT_EQ(attempt["http_status"], 0) << attempt.dump();
  EXPECT_EQ(attempt["detail"].get<std::string>().rfind("TimedOut: ", 0), 0u) << attempt.dump();
  // A transport error's attempt is stamped when it ended (its duration_ms is 0); the delivery
  // was accepted, then leased and sent within milliseconds.
  const int64_t ended_after_ms =
      attempt["at_ms"].get<int64_t>() - record["created_ms"].get<int64_t>();
  EXPECT_GE(ended_after_ms, 800) << record.dump();
  EXPECT_LE(ended_after_ms, 2500) << record.dump();
  EXPECT_NE(record["state"], "dead") << record.dump();
  EXPECT_NE(record["state"], "delivered") << record.dump();
  EXPECT_GE(receiver.connections_accepted(), 1);
}

// Verifies SIGHUP reads the budgets again: with tenant_intake at 1 per minute a second intake
// is refused (429); after the file says 1000 per second and SIGHUP, intake is accepted again
// without a restart. A file that no longer loads leaves the service running on what it had.
TEST_F(ServeConfigTest, HangupReloadsBudgets) {
  const std::string tight = "[budgets.tenant_intake]\nlimit = 1\nscale_ms = 60000\nburst = 1\n";
  WriteConfig("listen = \"127.0.0.1:0\"\n", "");
  std::ofstream(config_, std::ios::app) << tight;
  ChildProcess service;
  const int port = StartService(service);
  ASSERT_NE(port, 0) << service.error();
  const json delivery = {{"tenant", "acme"},
                         {"platform", "webhook"},
                         {"destination", "http://127.0.0.1:9/hook"},
                         {"credential", "hooks"},
                         {"payload", {{"n", 1}}}};
  auto post = [&] {
    return HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries", delivery.dump()).status;
  };
  ASSERT_EQ(post(), 202);
  ASSERT_EQ(post(), 429);
  // A broken file: nothing changes, the service stays up.
  std::ofstream(config_, std::ios::app) << "[budgets.tenant_intake]\nlimit = 0\n";
  ASSERT_EQ(::kill(service.pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(post(), 429);
  WriteConfig("listen = \"127.0.0.1:0\"\n", "");
  std::ofstream(config_, std::ios::app)
      << "[budgets.tenant_intake]\nlimit = 1000\nscale_ms = 1000\nburst = 1000\n";
  ASSERT_EQ(::kill(service.pid(), SIGHUP), 0);
  int status = 0;
  for (int waited = 0; waited < 15'000; waited += 50) {
    status = post();
    if (status != 429) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 202);
}

// Verifies a host name as server.listen: serve binds it (localhost is 127.0.0.1), the CLI
// reaches the service through the same name, and --check-config accepts it.
TEST_F(ServeConfigTest, ListensOnHostName) {
  WriteConfig("listen = \"localhost:0\"\n", "");
  ChildProcess service;
  const int port = StartService(service);
  ASSERT_NE(port, 0) << service.error();
  EXPECT_EQ(HttpCallAs(kAdminToken, port, "GET", "/healthz").status, 200);
  CommandOutput stats = RunCommand(
      BuildDir() + "/relay-egress",
      {"stats", "--server", "localhost:" + std::to_string(port), "--token", kAdminToken, "--json",
       "--data-dir", dir_.Sub("absent")});  // no store to fall back to: only the service can answer
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(stats.err.find("no service"), std::string::npos) << stats.err;
  EXPECT_TRUE(json::parse(stats.out, nullptr, false).is_object()) << stats.out;
  CommandOutput check = RunCommand(BuildDir() + "/relay-egress",
                                   {"serve", "--check-config", "--config", config_,
                                    "--profiles-dir", SourceDir() + "/config/profiles"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
}

// Verifies `serve --listen` takes a name too, and overrides the file's address.
TEST_F(ServeConfigTest, ListenFlagTakesHostName) {
  WriteConfig("listen = \"127.0.0.1:1\"\n", "");
  ChildProcess service;
  const int port = StartService(service, {"--listen", "localhost:0"});
  ASSERT_NE(port, 0) << service.error();
  EXPECT_EQ(HttpCallAs(kAdminToken, port, "GET", "/healthz").status, 200);
}

// Verifies a name that does not resolve stops serve at start with a message naming it (exit 3).
TEST_F(ServeConfigTest, UnresolvableListenNameFailsAtStart) {
  WriteConfig("listen = \"no-such-host.invalid:8686\"\n", "");
  CommandOutput run = RunCommand(
      BuildDir() + "/relay-egress",
      {"serve", "--config", config_, "--profiles-dir", SourceDir() + "/config/profiles"});
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_NE(run.err.find("listen on no-such-host.invalid:8686: cannot resolve host "
                         "'no-such-host.invalid'"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace egress
