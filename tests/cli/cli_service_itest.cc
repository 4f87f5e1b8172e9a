// The operator CLI against a running `relay-egress serve`.

#include <chrono>
#include <cstdlib>
#include <thread>

#include "tests/cli/cli_fixture.h"
#include "tests/support/http_client.h"

namespace egress {
namespace {

using nlohmann::json;

// Verifies list (filters, pagination) and show through the HTTP API.
TEST_F(CliServiceTest, ListAndShow) {
  Start(3, 2);
  auto all = Cli({"deliveries", "list", "--json"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(JsonLines(all).size(), 5u);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--state", "dead", "--json"})).size(), 3u);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--tenant", "beta", "--json"})).size(), 2u);
  EXPECT_EQ(Cli({"deliveries", "list", "--tenant", "nobody"}).exit_code, 0);
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

// Verifies that a replay by filter against the service follows its job to the end: 1,200 dead
// deliveries (two slices) replayed, the final counts with the job's id, nothing drawn when
// stderr is not a terminal, and the job still readable from the service afterwards.
TEST_F(CliServiceTest, ReplayFollowsTheJobToTheEnd) {
  Start(1'200, 0);
  auto needs_yes = Cli({"deliveries", "replay", "--state", "dead"});
  EXPECT_EQ(needs_yes.exit_code, 2) << needs_yes.err;
  auto all =
      Cli({"deliveries", "replay", "--state", "dead", "--tenant", "acme", "--yes", "--json"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.err, "");  // no progress bar off a terminal
  auto lines = JsonLines(all);
  ASSERT_EQ(lines.size(), 1u) << all.out;
  EXPECT_EQ(lines[0]["matched"], 1'200);
  EXPECT_EQ(lines[0]["replayed"], 1'200);
  EXPECT_EQ(lines[0]["dry_run"], false);
  ASSERT_TRUE(lines[0]["job"].is_string()) << all.out;
  TestResponse job =
      HttpCallAs(kCliAdminToken, port_, "GET", "/v1/jobs/" + lines[0]["job"].get<std::string>());
  EXPECT_EQ(job.status, 200);
  EXPECT_EQ(job.Json()["state"], "done") << job.body;
  EXPECT_EQ(job.Json()["filter"], (json{{"state", "dead"}, {"tenant", "acme"}})) << job.body;
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--state", "dead", "--json"})).size(), 0u);
  auto again = Cli({"deliveries", "replay", "--state", "dead"});
  EXPECT_EQ(again.exit_code, 1) << again.err;  // nothing left to match
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
  // No service at this address, and the running one holds the store: inspection reads it
  // read-only, replay needs it to itself.
  connection_ = {"--server", "http://127.0.0.1:1", "--data-dir", StoreDir()};
  auto read_only = JsonLines(Cli({"stats", "--json"}));
  ASSERT_EQ(read_only.size(), 1u);
  EXPECT_EQ(read_only[0]["dead"], 1);
  auto busy = Cli({"deliveries", "replay", dead_[0]});
  EXPECT_EQ(busy.exit_code, 3);
  EXPECT_NE(busy.err.find("is in use by another process; stop it or use --server"),
            std::string::npos)
      << busy.err;
}

// Verifies pause, pauses and resume through the service: a pause of a tenant's webhooks shows
// in the list and on its destination (deferred an hour), the same scope again is the same pause,
// resume ends it; a pause naming nothing is a usage error, an unknown id exit 1, and without the
// service exit 3.
TEST_F(CliServiceTest, PauseListAndResume) {
  Start(0, 2);
  auto paused = Cli({"pause", "--tenant", "beta", "--platform", "webhook", "--reason",
                     "receiver migrating", "--json"});
  ASSERT_EQ(paused.exit_code, 0) << paused.err;
  auto created = JsonLines(paused);
  ASSERT_EQ(created.size(), 1u) << paused.out;
  const std::string id = created[0]["id"];
  EXPECT_EQ(created[0]["reason"], "receiver migrating");
  auto again = Cli({"pause", "--platform", "webhook", "--tenant", "beta"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "paused " + id +
                           " (tenant beta, platform webhook); resume with: "
                           "relay-egress resume " +
                           id + "\n");
  auto table = Cli({"pauses"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find(id), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("receiver migrating"), std::string::npos) << table.out;
  auto listed = JsonLines(Cli({"pauses", "--json"}));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["pauses"].size(), 1u) << listed[0].dump();
  bool held = false;
  for (int i = 0; i < 100 && !held; ++i) {  // the deferred ones' destination is paused
    for (const json& d : JsonLines(Cli({"destinations", "--tenant", "beta", "--json"}))) {
      held = held || d.value("paused", false);
    }
    if (!held) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  EXPECT_TRUE(held);
  EXPECT_EQ(Cli({"pause", "--reason", "everything?"}).exit_code, 2);
  EXPECT_EQ(Cli({"pause", "--platform", "myspace"}).exit_code, 2);
  auto resumed = Cli({"resume", id});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, "resumed " + id + " (tenant beta, platform webhook)\n");
  auto unknown = Cli({"resume", id});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.err;
  EXPECT_EQ(Cli({"pauses"}).out.find(id), std::string::npos);
  connection_ = {"--server", "http://127.0.0.1:1", "--data-dir", StoreDir()};
  auto offline = Cli({"pauses"});
  EXPECT_EQ(offline.exit_code, 3);
  EXPECT_NE(offline.err.find("needs the running service"), std::string::npos) << offline.err;
}

// Verifies --since and --until through the HTTP API, and exit 2 naming a bad flag.
TEST_F(CliServiceTest, ListByCreationTime) {
  Start(1, 2);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--since", "1h", "--json"})).size(), 3u);
  EXPECT_EQ(Cli({"deliveries", "list", "--until", "1h"}).exit_code, 0);
  auto first = JsonLines(Cli({"deliveries", "list", "--limit", "1", "--json"}));
  ASSERT_FALSE(first.empty());
  const std::string created = std::to_string(first[0]["created_ms"].get<int64_t>());
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--since", created, "--json"})).size(), 3u);
  EXPECT_EQ(Cli({"deliveries", "list", "--until", created}).exit_code, 0);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--since", "2000-01-01T00:00:00+02:00", "--until",
                           "2999-01-01T00:00:00Z", "--state", "deferred", "--json"}))
                .size(),
            2u);
  auto bad = Cli({"deliveries", "list", "--until", "10x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--until:"), std::string::npos) << bad.err;
}

}  // namespace
// Verifies the CLI's token: --token with a tenant key shows that tenant only, RELAY_EGRESS_TOKEN
// stands in for --token, the admin token shows all, and no or a wrong token exits 2 saying how
// to give one (never echoing it).
TEST_F(CliServiceTest, TokenFlagAndEnvironment) {
  Start(3, 2);
  const std::vector<std::string> list = {"deliveries", "list", "--json", "--server", ServerUrl()};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = list;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCommand(BuildDir() + "/relay-egress", args);
  };
  auto beta = with({"--token", kBetaApiKey});
  EXPECT_EQ(beta.exit_code, 0) << beta.err;
  EXPECT_EQ(JsonLines(beta).size(), 2u);
  for (const auto& d : JsonLines(beta)) {
    EXPECT_EQ(d.value("tenant", ""), "beta");
  }
  EXPECT_EQ(JsonLines(with({"--token", kCliAdminToken})).size(), 5u);
  EXPECT_EQ(with({"--token", kBetaApiKey, "--tenant", "acme"}).exit_code, 2);

  auto none = with({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("RELAY_EGRESS_TOKEN"), std::string::npos) << none.err;
  auto wrong = with({"--token", "wrong-token-0123456789"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_EQ(wrong.err.find("wrong-token"), std::string::npos) << wrong.err;

  ASSERT_EQ(setenv("RELAY_EGRESS_TOKEN", kBetaApiKey, 1), 0);
  auto env = with({});
  unsetenv("RELAY_EGRESS_TOKEN");
  EXPECT_EQ(env.exit_code, 0) << env.err;
  EXPECT_EQ(JsonLines(env).size(), 2u);
  EXPECT_EQ(env.err.find("warning"), std::string::npos) << env.err;
}

// Verifies the token's safer ways in: --token warns that the process list shows it;
// --token-file reads the file's first line (blanks and line end dropped) without a warning; an
// empty file is refused without echoing anything; --token and --token-file together are a
// usage error.
TEST_F(CliServiceTest, TokenFileIsPreferredAndTokenIsWarnedAbout) {
  Start(3, 2);
  const std::vector<std::string> list = {"deliveries", "list", "--json", "--server", ServerUrl()};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = list;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCommand(BuildDir() + "/relay-egress", args);
  };
  auto flag = with({"--token", kBetaApiKey});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_NE(flag.err.find("warning: --token shows the key"), std::string::npos) << flag.err;
  EXPECT_EQ(flag.err.find(kBetaApiKey), std::string::npos) << flag.err;

  const std::string file = dir_.Sub("beta.token");
  std::ofstream(file) << "  " << kBetaApiKey << " \r\nsecond line\n";
  auto from_file = with({"--token-file", file});
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_EQ(JsonLines(from_file).size(), 2u);
  EXPECT_EQ(from_file.err.find("warning"), std::string::npos) << from_file.err;

  const std::string empty = dir_.Sub("empty.token");
  std::ofstream(empty) << "\nsecret-on-line-two-0123456789\n";
  auto refused = with({"--token-file", empty});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("first line is empty"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("secret-on-line-two"), std::string::npos) << refused.err;
  EXPECT_EQ(with({"--token", kBetaApiKey, "--token-file", file}).exit_code, 2);
}

}  // namespace egress
