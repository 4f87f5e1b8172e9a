// The operator CLI against a running `relay-egress serve`.

#include <fstream>

#include "tests/cli/cli_fixture.h"
#include "tests/support/source_root.h"

namespace egress {
namespace {

using nlohmann::json;

std::string SourceDir() { return SourceRoot(); }

class CliServiceTest : public CliTest {
 protected:
  // Fills the store, then starts the service on it. Only dead and deferred-for-an-hour
  // deliveries, so the service leaves them alone until the CLI says otherwise.
  void Start(int dead, int deferred) {
    FillStore(0, dead, deferred);
    config_ = dir_.Sub("relay-egress.toml");
    std::ofstream(config_) << "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << StoreDir()
                           << "\"\nadmin_token = \"operator-secret-token-0123456789\"\n"
                           << "[platforms.webhook]\nallow_private_networks = true\n"
                           << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
                           << "[tenants.beta.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
    port_ = service_.Start(
        BuildDir() + "/relay-egress",
        {"serve", "--config", config_, "--profiles-dir", SourceDir() + "/config/profiles"});
    ASSERT_NE(port_, 0) << service_.error();
    connection_ = {"--server", "http://127.0.0.1:" + std::to_string(port_)};
  }

  std::string config_;
  ChildProcess service_;
  int port_ = 0;
};

// Verifies list (filters, pagination) and show through the HTTP API.
TEST_F(CliServiceTest, ListAndShow) {
  Start(3, 2);
  auto all = Cli({"deliveries", "list", "--json"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(JsonLines(all).size(), 5u);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--state", "dead", "--json"})).size(), 3u);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--tenant", "beta", "--json"})).size(), 2u);
  EXPECT_EQ(Cli({"deliveries", "list", "--tenant", "nobody"}).exit_code, 1);
  auto page = JsonLines(Cli({"deliveries", "list", "--limit", "2", "--json"}));
  ASSERT_EQ(page.size(), 3u);
  auto rest = JsonLines(Cli({"deliveries", "list", "--cursor", page[2]["next_cursor"], "--json"}));
  EXPECT_EQ(rest.size(), 3u);
  auto shown = JsonLines(Cli({"deliveries", "show", dead_[0], "--json"}));
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0]["reason"], "http_404");
  EXPECT_EQ(Cli({"deliveries", "show", "no-such-id"}).exit_code, 1);
}

// Verifies replay by id, by filter with a dry run, and cancel through the HTTP API.
TEST_F(CliServiceTest, ReplayAndCancel) {
  Start(3, 2);
  auto one = Cli({"deliveries", "replay", dead_[0]});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "replayed " + dead_[0] + "\n");
  auto dry = JsonLines(Cli({"deliveries", "replay", "--state", "dead", "--dry-run", "--json"}));
  ASSERT_EQ(dry.size(), 1u);
  EXPECT_EQ(dry[0]["matched"], 2);
  auto all = Cli({"deliveries", "replay", "--state", "dead"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("replayed 2 of 2"), std::string::npos) << all.out;
  auto cancel = Cli({"deliveries", "cancel", deferred_[0], deferred_[1]});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--state", "cancelled", "--json"})).size(), 2u);
  EXPECT_EQ(Cli({"deliveries", "cancel", deferred_[0]}).exit_code, 1);
}

// Verifies stats and destinations come from the service, and that the store is then in use.
TEST_F(CliServiceTest, StatsDestinationsAndBusyStore) {
  Start(1, 1);
  auto stats = JsonLines(Cli({"stats", "--json"}));
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0]["dead"], 1);
  EXPECT_TRUE(stats[0].contains("platform_429s")) << stats[0].dump();
  auto dests = Cli({"destinations", "--json"});
  EXPECT_TRUE(dests.exit_code == 0 || dests.exit_code == 1) << dests.err;
  for (const json& d : JsonLines(dests)) {
    EXPECT_TRUE(d.contains("ref") && d.contains("key") && d.contains("disabled")) << d.dump();
  }
  auto enable = Cli({"destinations", "enable", "webhook/acme/hooks/http://127.0.0.1:9/none"});
  EXPECT_EQ(enable.exit_code, 1) << enable.err;
  // No service at this address, and the running one holds the store.
  connection_ = {"--server", "http://127.0.0.1:1", "--data-dir", StoreDir()};
  auto busy = Cli({"stats"});
  EXPECT_EQ(busy.exit_code, 3);
  EXPECT_NE(busy.err.find("in use"), std::string::npos) << busy.err;
}

}  // namespace
}  // namespace egress
