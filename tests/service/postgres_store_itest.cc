// relay-egress serve with [store] backend = "postgres" (issue 29), as real processes against a
// real PostgreSQL 15 (tests/support/postgres_server.h) and the simulator: deliveries accepted,
// delivered and counted from the shared store; a second node refused while the first holds the
// store's node lock; a killed node's backlog served by the node started after it; the config's
// typed refusals.

#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "dispatcher/base/clock.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/postgres_server.h"
#include "tests/support/run_command.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kSecretsKey[] = "8f2b0c5d7e1a4b6c9d3e5f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4";

class PostgresStoreServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (PostgresServer::BinDir().empty()) {
      GTEST_SKIP() << "PostgreSQL 15 is not installed (apt-get install postgresql-15)";
    }
    PostgresServer& pg = PostgresServer::Shared();
    ASSERT_NE(pg.port(), 0) << pg.error();
    const std::string db = pg.CreateDatabase();
    ASSERT_FALSE(db.empty()) << pg.error();
    url_ = pg.Url(db);
    Status started = sim_.Start(SimWire::kHttp);
    ASSERT_TRUE(started.ok()) << started.ToString();
    std::ofstream(dir_.Sub("secrets.key")) << kSecretsKey << "\n";
    std::ofstream(dir_.Sub("pg.password")) << "unused-with-trust-auth\n";
    config_ = WriteConfig("node.toml", "node-a");
  }

  // A node's config: its own data directory, the shared store, the shared secrets key.
  std::string WriteConfig(const std::string& name, const std::string& node,
                          const std::string& store_extra = "") {
    const std::string path = dir_.Sub(name);
    std::ofstream(path) << "[server]\nadmin_token = \"" << kAdminToken
                        << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub(node)
                        << "\"\nsecrets_key_file = \"" << dir_.Sub("secrets.key") << "\"\n"
                        << "[store]\nbackend = \"postgres\"\nurl = \"" << url_
                        << "\"\npassword_file = \"" << dir_.Sub("pg.password") << "\"\n"
                        << "pool_size = 4\n"
                        << store_extra << "[platforms.webhook]\nallow_private_networks = true\n"
                        << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                        << "secret = \"" << kSecret << "\"\n";
    return path;
  }

  int Start(ChildProcess& p, const std::string& config) {
    return p.Start(BuildDir() + "/relay-egress", {"serve", "--config", config, "--profiles-dir",
                                                  SourceDir() + "/config/profiles"});
  }

  json Hook(const std::string& path, int n) {
    return {{"tenant", "acme"},
            {"platform", "webhook"},
            {"destination", sim_.BaseUrl() + path},
            {"credential", "hooks"},
            {"payload", {{"n", n}}}};
  }

  json WaitForStats(int port, const std::function<bool(const json&)>& pred) {
    json stats;
    for (int waited = 0; waited < 20'000; waited += 50) {
      stats = HttpCallAs(kAdminToken, port, "GET", "/v1/stats").Json();
      if (pred(stats)) {
        return stats;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "timed out; last stats: " << stats.dump();
    return stats;
  }

  TempDir dir_;
  SimProcess sim_;
  std::string url_;
  std::string config_;
};

// Verifies that a node on the shared store accepts, delivers and counts from it; that a second
// node on the same store waits as a standby (not listening) while the first serves; and that when
// the first is killed (SIGKILL) the standby takes the store within seconds and serves what it
// left: its deferred delivery is there with its attempt, and new deliveries go out.
TEST_F(PostgresStoreServiceTest, AStandbyTakesTheStoreWhenTheServingNodeIsKilled) {
  std::string parked;
  ChildProcess b;
  std::atomic<int> standby_port{0};
  std::thread standby;
  SystemClock clock;
  SteadyTime killed;
  {
    ChildProcess a;
    const int port = Start(a, config_);
    ASSERT_NE(port, 0) << a.error();
    json batch = {{"deliveries", {Hook("/hooks/a", 1), Hook("/hooks/a", 2)}}};
    TestResponse r = HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries/batch", batch.dump());
    ASSERT_EQ(r.status, 202) << r.body;
    WaitForStats(port, [](const json& s) { return s["delivered"] == 2; });
    // One that cannot be delivered (a closed port): retried later, so it stays.
    json closed = Hook("/unused", 3);
    closed["destination"] = "http://127.0.0.1:9/closed";
    r = HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries", closed.dump());
    ASSERT_EQ(r.status, 202) << r.body;
    parked = r.Json().value("id", "");
    WaitForStats(port, [](const json& s) { return s["deferred"] == 1; });

    // A second node on the store waits as a standby: it does not listen while the first holds
    // the store's node lock.
    standby_port = 0;
    standby = std::thread([&] {
      standby_port = b.Start(BuildDir() + "/relay-egress",
                             {"serve", "--config", WriteConfig("b.toml", "node-b"),
                              "--profiles-dir", SourceDir() + "/config/profiles"},
                             /*timeout_ms=*/60'000);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    EXPECT_EQ(standby_port.load(), 0) << "the standby serves while the first node does";
    // The first node still serves.
    EXPECT_EQ(HttpCallAs(kAdminToken, port, "GET", "/healthz").status, 200);

    const int status = a.Signal(SIGKILL);
    EXPECT_TRUE(WIFSIGNALED(status));  // (no ASSERT while the standby's thread runs)
    killed = clock.Now();
  }
  // The killed node's lock went with its connection: the standby takes the store.
  standby.join();
  const int port = standby_port.load();
  ASSERT_NE(port, 0) << b.error();
  const double takeover_s = std::chrono::duration<double>(clock.Now() - killed).count();
  EXPECT_LT(takeover_s, 10.0);
  RecordProperty("takeover_ms", static_cast<int>(takeover_s * 1000));
  json d = HttpCallAs(kAdminToken, port, "GET", "/v1/deliveries/" + parked).Json();
  EXPECT_EQ(d["state"], "deferred") << d.dump();
  EXPECT_GE(d["attempts"].get<int>(), 1) << d.dump();
  json stats = HttpCallAs(kAdminToken, port, "GET", "/v1/stats").Json();
  EXPECT_EQ(stats["delivered"], 2) << stats.dump();
  TestResponse r =
      HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries", Hook("/hooks/b", 4).dump());
  ASSERT_EQ(r.status, 202) << r.body;
  WaitForStats(port, [](const json& s) { return s["delivered"] == 3; });
  const int status = b.Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Verifies the typed refusals: postgres without a shared secrets key (a key generated per node
// would seal what no other node can open), without a url, with an unknown backend, and with a
// password file that is missing.
TEST_F(PostgresStoreServiceTest, ConfigRefusalsAreTyped) {
  auto run = [&](const std::string& text) {
    const std::string path = dir_.Sub("bad.toml");
    std::ofstream(path) << "[server]\nadmin_token = \"" << kAdminToken
                        << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub("bad")
                        << "\"\n"
                        << text;
    return RunCommand(BuildDir() + "/relay-egress", {"serve", "--config", path});
  };
  CommandOutput no_key = run("[store]\nbackend = \"postgres\"\nurl = \"" + url_ + "\"\n");
  EXPECT_NE(no_key.exit_code, 0);
  EXPECT_NE(no_key.err.find("secrets_key_file"), std::string::npos) << no_key.err;
  CommandOutput no_url = run("[store]\nbackend = \"postgres\"\n");
  EXPECT_NE(no_url.exit_code, 0);
  EXPECT_NE(no_url.err.find("store.url"), std::string::npos) << no_url.err;
  CommandOutput unknown = run("[store]\nbackend = \"mysql\"\n");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("\"rocksdb\" or \"postgres\""), std::string::npos) << unknown.err;
  CommandOutput missing = run("[store]\nbackend = \"postgres\"\nurl = \"" + url_ +
                              "\"\npassword_file = \"" + dir_.Sub("nope") + "\"\n");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("password_file"), std::string::npos) << missing.err;
  // Without the service, the CLI does not open the data directory's RocksDB store instead.
  CommandOutput cli =
      RunCommand(BuildDir() + "/relay-egress", {"deliveries", "list", "--config", config_});
  EXPECT_EQ(cli.exit_code, 3) << cli.out << cli.err;
  EXPECT_NE(cli.err.find("PostgreSQL"), std::string::npos) << cli.err;
  // A password in the URL is never echoed.
  CommandOutput secret_url =
      run("[store]\nbackend = \"postgres\"\nurl = \"postgresql://egress:hunter2-secret@127.0.0.1:1/"
          "x\"\n[server.retention]\nbogus = 1\n");
  EXPECT_NE(secret_url.exit_code, 0);
  EXPECT_EQ(secret_url.err.find("hunter2-secret"), std::string::npos) << secret_url.err;
}

}  // namespace
}  // namespace egress
