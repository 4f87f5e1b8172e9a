// The operator CLI with no service running: it opens the store directly.

#include <filesystem>
#include <map>

#include "tests/cli/cli_fixture.h"

namespace egress {
namespace {

using nlohmann::json;

class CliOfflineTest : public CliTest {
 protected:
  void SetUp() override {
    // Port 1 refuses connections, so every command falls back to the store.
    connection_ = {"--server", "http://127.0.0.1:1", "--data-dir", StoreDir()};
  }

  size_t CountIn(const std::string& state) {
    return JsonLines(Cli({"deliveries", "list", "--state", state, "--json"})).size();
  }
};

// Verifies list filters, exit 1 when nothing matches, and the human table.
TEST_F(CliOfflineTest, ListFilters) {
  FillStore(3, 2, 2);
  auto all = Cli({"deliveries", "list", "--json"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  auto lines = JsonLines(all);
  ASSERT_EQ(lines.size(), 7u);
  for (const json& d : lines) {
    for (const char* key : {"id", "state", "tenant", "platform", "destination", "attempts",
                            "created_ms", "updated_ms"}) {
      EXPECT_TRUE(d.contains(key)) << key << " " << d.dump();
    }
  }
  EXPECT_EQ(CountIn("dead"), 2u);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--tenant", "beta", "--json"})).size(), 2u);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--reason", "budget:", "--json"})).size(), 2u);
  EXPECT_EQ(JsonLines(Cli({"deliveries", "list", "--destination", kDestA, "--json"})).size(), 5u);
  auto none = Cli({"deliveries", "list", "--state", "dead", "--tenant", "beta"});
  EXPECT_EQ(none.exit_code, 0);  // an empty list is an answer
  EXPECT_NE(none.err.find("no deliveries match"), std::string::npos) << none.err;
  auto table = Cli({"deliveries", "list", "--state", "deferred"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  ASSERT_EQ(table.Lines().size(), 3u) << table.out;
  EXPECT_EQ(table.Lines()[0].rfind("ID", 0), 0u) << table.out;
  EXPECT_NE(table.out.find("due in 59m"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("budget:webhook_destination"), std::string::npos);
}

// Verifies that --limit and --cursor page through everything exactly once.
TEST_F(CliOfflineTest, Pagination) {
  FillStore(5, 0, 0);
  auto first = Cli({"deliveries", "list", "--limit", "3", "--json"});
  EXPECT_EQ(first.exit_code, 0) << first.err;
  auto lines = JsonLines(first);
  ASSERT_EQ(lines.size(), 4u);
  ASSERT_TRUE(lines[3].contains("next_cursor"));
  const std::string cursor = lines[3]["next_cursor"];
  auto rest = JsonLines(Cli({"deliveries", "list", "--limit", "3", "--cursor", cursor, "--json"}));
  ASSERT_EQ(rest.size(), 2u);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(lines[i]["id"]);
  for (const json& d : rest)
    ids.push_back(d["id"]);
  EXPECT_EQ(ids, queued_);
  auto human = Cli({"deliveries", "list", "--limit", "3"});
  EXPECT_NE(human.out.find("more: --cursor " + cursor), std::string::npos) << human.out;
}

// Verifies show: the whole record with attempts, and exit 1 for an unknown id.
TEST_F(CliOfflineTest, Show) {
  FillStore(0, 1, 0);
  auto shown = Cli({"deliveries", "show", dead_[0], "--json"});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  auto lines = JsonLines(shown);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["state"], "dead");
  EXPECT_EQ(lines[0]["reason"], "http_404");
  EXPECT_EQ(lines[0]["payload"]["text"], "hi");
  ASSERT_EQ(lines[0]["attempts_history"].size(), 1u);
  EXPECT_EQ(lines[0]["attempts_history"][0]["http_status"], 404);
  auto human = Cli({"deliveries", "show", dead_[0]});
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("reason:"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("x-ratelimit-remaining=3"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("s ago"), std::string::npos) << human.out;
  auto missing = Cli({"deliveries", "show", "no-such-id"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_FALSE(missing.err.empty());
}

// Verifies replay by id: dead and deferred go back to queued; others are refused with exit 1.
TEST_F(CliOfflineTest, ReplayById) {
  FillStore(1, 2, 1);
  auto dry = Cli({"deliveries", "replay", dead_[0], "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(CountIn("dead"), 2u);
  auto r = Cli({"deliveries", "replay", dead_[0], deferred_[0]});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.Lines().size(), 2u) << r.out;
  EXPECT_EQ(CountIn("dead"), 1u);
  EXPECT_EQ(CountIn("queued"), 3u);
  auto refused = Cli({"deliveries", "replay", queued_[0]});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("only dead and deferred"), std::string::npos) << refused.err;
}

// Verifies replay by filter, its dry run, and nothing-matched.
TEST_F(CliOfflineTest, ReplayByFilter) {
  FillStore(0, 2, 2);
  auto dry = Cli({"deliveries", "replay", "--state", "dead", "--dry-run", "--json"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  auto dl = JsonLines(dry);
  ASSERT_EQ(dl.size(), 1u);
  EXPECT_EQ(dl[0]["matched"], 2);
  EXPECT_EQ(dl[0]["dry_run"], true);
  EXPECT_EQ(CountIn("dead"), 2u);
  auto none = Cli({"deliveries", "replay", "--state", "deferred", "--tenant", "acme"});
  EXPECT_EQ(none.exit_code, 1);
  auto r = Cli({"deliveries", "replay", "--state", "deferred", "--tenant", "beta"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("replayed 2 of 2"), std::string::npos) << r.out;
  EXPECT_EQ(CountIn("deferred"), 0u);
  EXPECT_EQ(CountIn("dead"), 2u);
}

// Verifies that replaying more than 100 at once needs --yes and changes nothing without it.
TEST_F(CliOfflineTest, ReplayGuard) {
  FillStore(0, 101, 0);
  auto refused = Cli({"deliveries", "replay", "--state", "dead"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--yes"), std::string::npos) << refused.err;
  EXPECT_EQ(
      JsonLines(Cli({"deliveries", "list", "--state", "dead", "--limit", "1000", "--json"})).size(),
      101u);
  auto r = Cli({"deliveries", "replay", "--state", "dead", "--yes", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = JsonLines(r);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["replayed"], 101);
  EXPECT_EQ(CountIn("dead"), 0u);
}

// Verifies cancel: waiting ones are cancelled; a second cancel is refused with exit 1.
TEST_F(CliOfflineTest, Cancel) {
  FillStore(2, 0, 0);
  auto r = Cli({"deliveries", "cancel", queued_[0], "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = JsonLines(r);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["state"], "cancelled");
  EXPECT_EQ(CountIn("cancelled"), 1u);
  EXPECT_EQ(Cli({"deliveries", "cancel", queued_[0]}).exit_code, 1);
}

// Verifies stats and destinations from the store.
TEST_F(CliOfflineTest, StatsAndDestinations) {
  FillStore(3, 2, 2);
  auto stats = JsonLines(Cli({"stats", "--json"}));
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0]["queued"], 3);
  EXPECT_EQ(stats[0]["dead"], 2);
  EXPECT_EQ(stats[0]["deferred"], 2);
  auto human = Cli({"stats"});
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("deferred"), std::string::npos);
  auto dests = Cli({"destinations", "--json"});
  EXPECT_EQ(dests.exit_code, 0) << dests.err;
  auto lines = JsonLines(dests);
  ASSERT_EQ(lines.size(), 2u) << dests.out;
  EXPECT_EQ(lines[0]["ref"], std::string("webhook/acme/hooks/") + kDestA);
  EXPECT_EQ(lines[0]["queued"], 3);
  EXPECT_EQ(lines[1]["deferred"], 2);
  EXPECT_EQ(JsonLines(Cli({"destinations", "--tenant", "beta", "--json"})).size(), 1u);
  EXPECT_EQ(Cli({"destinations", "--platform", "slack"}).exit_code, 0);
  auto table = Cli({"destinations"});
  EXPECT_NE(table.out.find("DESTINATION"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("in 59m"), std::string::npos) << table.out;
  // Enabling is the service's business.
  auto enable = Cli({"destinations", "enable", std::string("webhook/acme/hooks/") + kDestA});
  EXPECT_EQ(enable.exit_code, 3);
  EXPECT_NE(enable.err.find("running service"), std::string::npos) << enable.err;
}

// Verifies that inspection opens the store read-only while another process holds it, while
// replay and cancel need the store to themselves (exit 3); and exit 3 for a missing store.
TEST_F(CliOfflineTest, StoreHeldByAnotherProcess) {
  FillStore(1, 1, 0);
  {
    auto held = storage::OpenRocksQueueStore({.path = StoreDir()}, 0);
    ASSERT_TRUE(held);
    auto list = Cli({"deliveries", "list", "--json"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    EXPECT_EQ(JsonLines(list).size(), 2u);
    EXPECT_NE(list.err.find("read-only"), std::string::npos) << list.err;
    EXPECT_EQ(Cli({"deliveries", "show", dead_[0]}).exit_code, 0);
    EXPECT_EQ(JsonLines(Cli({"stats", "--json"}))[0]["dead"], 1);
    EXPECT_EQ(JsonLines(Cli({"destinations", "--json"})).size(), 1u);
    for (std::vector<std::string> cmd : {std::vector<std::string>{"deliveries", "replay", dead_[0]},
                                         {"deliveries", "replay", "--state", "dead", "--dry-run"},
                                         {"deliveries", "cancel", queued_[0]}}) {
      auto busy = Cli(cmd);
      EXPECT_EQ(busy.exit_code, 3) << cmd[1];
      EXPECT_NE(busy.err.find("store " + StoreDir() +
                              " is in use by another process; stop it or use --server"),
                std::string::npos)
          << busy.err;
    }
    EXPECT_EQ((*held)->Get(dead_[0])->state, storage::DeliveryState::kDead);
  }
  connection_ = {"--server", "http://127.0.0.1:1", "--data-dir", dir_.Sub("nothing")};
  auto missing = Cli({"stats"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("no service at http://127.0.0.1:1"), std::string::npos) << missing.err;
}

// Verifies that read-only inspection leaves in-flight work in flight and writes no file, while
// the holder is idle. Leases live in the holder's memory, so the inspection shows them queued.
TEST_F(CliOfflineTest, ReadOnlyInspectionWritesNothing) {
  FillStore(2, 0, 0);
  auto held = storage::OpenRocksQueueStore({.path = StoreDir()}, 0);
  ASSERT_TRUE(held);
  auto leased = (*held)->LeaseDue(ToUnixMillis(SystemClock().WallNow()) + 1000, 1);
  ASSERT_TRUE(leased && leased->size() == 1u);
  auto snapshot = [&] {
    std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> files;
    for (const auto& e : std::filesystem::directory_iterator(StoreDir())) {
      files[e.path().filename().string()] = {e.file_size(), e.last_write_time()};
    }
    return files;
  };
  const auto before = snapshot();
  EXPECT_EQ(CountIn("in_flight"), 0u);
  EXPECT_EQ(CountIn("queued"), 2u);
  EXPECT_EQ(Cli({"stats"}).exit_code, 0);
  EXPECT_EQ(Cli({"destinations"}).exit_code, 0);
  EXPECT_EQ(Cli({"deliveries", "show", (*leased)[0].id}).exit_code, 0);
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ((*held)->Get((*leased)[0].id)->state, storage::DeliveryState::kInFlight);
}

// Verifies --since and --until: ages, RFC 3339 and Unix ms; a bad value is exit 2 naming the flag.
TEST_F(CliOfflineTest, ListByCreationTime) {
  const int64_t now = ToUnixMillis(SystemClock().WallNow());
  FillStoreAt({now - 3 * 3'600'000, now - 3'600'000, now});
  auto ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"deliveries", "list", "--json"});
    std::vector<std::string> out;
    for (const json& d : JsonLines(Cli(args))) {
      out.push_back(d["id"]);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids({"--since", "2h"}), (V{queued_[1], queued_[2]}));
  EXPECT_EQ(ids({"--until", "2h"}), (V{queued_[0]}));
  EXPECT_EQ(ids({"--since", "4h", "--until", "30m"}), (V{queued_[0], queued_[1]}));
  EXPECT_EQ(ids({"--since", std::to_string(now)}), (V{queued_[2]}));
  EXPECT_EQ(ids({"--until", "2999-01-01T00:00:00Z", "--since", "1d"}).size(), 3u);
  EXPECT_EQ(Cli({"deliveries", "list", "--since", "2999-01-01T00:00:00Z"}).exit_code, 0);
  for (const char* flag : {"--since", "--until"}) {
    auto bad = Cli({"deliveries", "list", flag, "yesterday"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find(std::string(flag) + ": 'yesterday' is not a time"), std::string::npos)
        << bad.err;
  }
  EXPECT_EQ(Cli({"deliveries", "list", "--since", "2026-02-30T00:00:00Z"}).exit_code, 2);
}

// Verifies that top needs the running service: exit 3 naming it, even with a store at hand.
TEST_F(CliOfflineTest, TopNeedsTheService) {
  FillStore(1, 0, 0);
  auto top = Cli({"top", "--once"});
  EXPECT_EQ(top.exit_code, 3);
  EXPECT_NE(top.err.find("needs the running service"), std::string::npos) << top.err;
}

// Verifies usage errors exit 2 and --help shows an example.
TEST_F(CliOfflineTest, UsageAndHelp) {
  FillStore(1, 0, 0);
  EXPECT_EQ(Cli({"deliveries", "replay"}).exit_code, 2);
  EXPECT_EQ(Cli({"deliveries", "replay", "x", "--state", "dead"}).exit_code, 2);
  EXPECT_EQ(Cli({"deliveries", "list", "--state", "bogus"}).exit_code, 2);
  EXPECT_EQ(Cli({"deliveries", "list", "--limit", "0"}).exit_code, 2);
  EXPECT_EQ(Cli({"destinations", "enable", "nonsense"}).exit_code, 2);
  for (std::vector<std::string> cmd : {std::vector<std::string>{"deliveries", "list"},
                                       {"deliveries", "show"},
                                       {"deliveries", "replay"},
                                       {"deliveries", "cancel"},
                                       {"stats"},
                                       {"destinations"},
                                       {"destinations", "enable"},
                                       {"top"}}) {
    cmd.push_back("--help");
    auto help = RunCommand(BuildDir() + "/relay-egress", cmd);
    EXPECT_EQ(help.exit_code, 0) << cmd[0];
    EXPECT_NE(help.out.find("Example"), std::string::npos) << cmd[0] << " " << help.out;
  }
}

}  // namespace
}  // namespace egress
