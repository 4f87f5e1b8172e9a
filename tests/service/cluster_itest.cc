// Several relay-egress serve processes sharing one Discord bot token through one redis-server
// ([cluster], docs/deployment.md), against the platform simulator: issue 16's done-when runs.

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dispatcher/base/clock.h"
#include "tests/support/child_process.h"
#include "tests/support/dynalite_server.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/sim_process.h"
#include "tests/support/stall_watch.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";

class ClusterTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (RedisServer::Binary().empty()) {
      GTEST_SKIP() << "no redis-server";
    }
    ASSERT_NE(redis_.port(), 0) << redis_.error();
    StartSim();
  }

  void StartSim() {
    ASSERT_TRUE(sim_.Start(SimWire::kHttp).ok());
    // Issue 16: the global 50/s of one bot token, 5 per 5 s per channel.
    sim_.Configure(
        {{"discord", {{"global_per_s", 50}, {"bucket_limit", 5}, {"bucket_window_ms", 5000}}}});
  }

  // The [cluster] lines that name the shared budget store.
  virtual std::string SharedStoreLines() { return "redis_url = \"" + redis_.Url() + "\"\n"; }

  // Starts `n` nodes sharing the budgets; each its own store.
  void StartNodes(int n, const std::string& on_redis_down = "local_share") {
    for (int i = 0; i < n; ++i) {
      const std::string config = dir_.Sub("node" + std::to_string(i) + ".toml");
      std::ofstream(config) << "[server]\nadmin_token = \"" << kAdminToken
                            << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \""
                            << dir_.Sub("store" + std::to_string(i)) << "\"\n"
                            << extra_server_ << "[platforms.discord]\nbase_url = \""
                            << sim_.BaseUrl() << "\"\n"
                            << "[platforms.line]\nbase_url = \"" << sim_.BaseUrl() << "\"\n"
                            << "[cluster]\n"
                            << SharedStoreLines() << "node_id = \"node-" << i
                            << "\"\nexpected_nodes = " << n << "\non_budget_store_down = \""
                            << on_redis_down << "\"\n"
                            << "[tenants.acme.credentials.dbot]\nplatform = \"discord\"\n"
                            << "token = \"bot-acme\"\n"
                            << "[tenants.acme.credentials.lchan]\nplatform = \"line\"\n"
                            << "token = \"line-acme\"\n";
      nodes_.push_back(std::make_unique<ChildProcess>());
      const int port = nodes_.back()->Start(
          BuildDir() + "/relay-egress",
          {"serve", "--config", config, "--profiles-dir", SourceDir() + "/config/profiles"});
      ASSERT_NE(port, 0) << nodes_.back()->error();
      ports_.push_back(port);
    }
    // Every node on shared budgets before the load starts.
    for (int port : ports_) {
      bool up = false;
      for (int i = 0; i < 500 && !up; ++i) {
        up = HttpCallAs(kAdminToken, port, "GET", "/metrics")
                 .body.find("relay_egress_budget_store_up 1") != std::string::npos;
        if (!up) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      ASSERT_TRUE(up) << "node on port " << port << " never reached its budget store";
    }
  }

  // `total` messages over `channels` channels, posted round-robin to the nodes in batches.
  void PostRoundRobin(int total, int channels) {
    std::vector<json> batches(ports_.size(), json{{"deliveries", json::array()}});
    for (int i = 0; i < total; ++i) {
      const std::string channel = std::to_string(100000000000000000LL + i % channels);
      batches[i % ports_.size()]["deliveries"].push_back(
          {{"tenant", "acme"},
           {"platform", "discord"},
           {"destination", "channels/" + channel},
           {"credential", "dbot"},
           {"payload", {{"content", "hi"}, {"msg_id", i}}}});
    }
    for (size_t n = 0; n < ports_.size(); ++n) {
      TestResponse r =
          HttpCallAs(kAdminToken, ports_[n], "POST", "/v1/deliveries/batch", batches[n].dump());
      ASSERT_EQ(r.status, 202) << r.body;
    }
  }

  // `total` LINE pushes over `users` users of one channel token, all to the node `node`.
  void PostLine(size_t node, int total, int users) {
    json batch{{"deliveries", json::array()}};
    for (int i = 0; i < total; ++i) {
      batch["deliveries"].push_back(
          {{"tenant", "acme"},
           {"platform", "line"},
           {"destination", fmt::format("U{:032x}", i % users)},
           {"credential", "lchan"},
           {"payload", {{"messages", {{{"type", "text"}, {"text", "hi"}}}}}}});
    }
    TestResponse r =
        HttpCallAs(kAdminToken, ports_[node], "POST", "/v1/deliveries/batch", batch.dump());
    ASSERT_EQ(r.status, 202) << r.body;
  }

  // Waits (bounded, for liveness only) until the simulator accepted `total`.
  // Keeps the accepted count of every whole second since `start` in per_second_.
  json WaitAccepted(int total, int timeout_ms = 120'000) {
    json stats;
    const SteadyTime start = clock_.Now();
    per_second_.clear();
    for (int waited = 0; waited < timeout_ms; waited += 50) {
      stats = sim_.Stats();
      const int accepted = stats["totals"]["accepted"].get<int>();
      const auto second = static_cast<size_t>(
          std::chrono::duration_cast<std::chrono::seconds>(clock_.Now() - start).count());
      per_second_.resize(second + 1, accepted);
      per_second_[second] = accepted;
      if (accepted >= total - 30 && lagging_.empty()) {
        for (const auto& [dest, counters] : stats["destinations"].items()) {
          if (counters["accepted"].get<int>() < 10) {
            lagging_ += dest.substr(dest.size() - 2) + ":" +
                        std::to_string(counters["accepted"].get<int>()) + " ";
          }
        }
        lagging_ += "at " + std::to_string(second) + " s";
      }
      if (accepted >= total) {
        return stats;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "timed out; last stats: " << stats["totals"].dump();
    return stats;
  }

  // Discord token stops counted by the node on `port`
  // (relay_egress_discord_invalid_request_stops_total).
  int64_t TokenStops(int port) {
    const std::string body = HttpCallAs(kAdminToken, port, "GET", "/metrics").body;
    const std::string name = "relay_egress_discord_invalid_request_stops_total{";
    int64_t total = 0;
    for (size_t at = body.find(name); at != std::string::npos; at = body.find(name, at + 1)) {
      const size_t end = body.find('\n', at);
      const size_t space = body.rfind(' ', end);
      total += std::atoll(body.substr(space + 1, end - space - 1).c_str());
    }
    return total;
  }

  std::string extra_server_;  // more [server] lines for every node
  // Scenarios run over each shared store (below).
  void OverridesReachEveryNodeWithinASecond();
  void PauseHoldsOnEveryNodeAndResumesFromAnother();
  void AdaptivePaceReachesTheOtherNodes();

  SystemClock clock_;
  TempDir dir_;
  RedisServer redis_;
  SimProcess sim_;
  std::vector<std::unique_ptr<ChildProcess>> nodes_;
  std::vector<int> ports_;
  std::vector<int> per_second_;
  std::string lagging_;
};

// The messages accepted in each second, "48 50 47 ...".
std::string Rates(const std::vector<int>& per_second) {
  std::string out;
  int before = 0;
  for (int accepted : per_second) {
    out += std::to_string(accepted - before) + " ";
    before = accepted;
  }
  return out;
}

// A run that stalled over StallWatch::kJudgedMs may draw this many 429s more (below).
constexpr int kAllowedAfterStall = 5;

// Issue 16's first done-when (and issue 36's over DynamoDB): three nodes on one bot token, 900
// messages over 90 channels posted round-robin, cost no 429 and no request before a Retry-After
// or reset. The pacing margin absorbs 50 ms of lateness in the global's 1 s window, 20 ms of it
// the nodes' own (docs/pacing.md, "Shared budgets"); a run in which this machine stalled longer
// (the simulator's loop or this process, over StallWatch::kJudgedMs) may draw a few global 429s and
// is held to those: the simulator stamps what waited out its stall as arriving together. 1 run in
// about 30 did (a second of 36 accepted, then 3 429s and 2 early requests); so did 1 of 4 runs with
// the simulator stopped for 300 ms (SIGSTOP) mid-run.
void ExpectThreeNodesShareOneToken(ClusterTest& t, const char* store) {
  t.StartNodes(3);
  StallWatch stalls;
  const SteadyTime start = t.clock_.Now();
  t.PostRoundRobin(900, 90);
  json stats = t.WaitAccepted(900);
  const double seconds = std::chrono::duration<double>(t.clock_.Now() - start).count();
  const int64_t stalled_ms = LongestStallMs(stalls, stats);
  const int allowed = stalled_ms > StallWatch::kJudgedMs ? kAllowedAfterStall : 0;
  EXPECT_EQ(stats["totals"]["accepted"], 900) << stats["totals"].dump();
  EXPECT_LE(stats["totals"]["rate_limited"].get<int>(), allowed)
      << stats["totals"].dump() << ", longest stall " << stalled_ms << " ms";
  EXPECT_LE(stats["totals"]["early"].get<int>(), allowed)
      << stats["totals"].dump() << ", longest stall " << stalled_ms << " ms";
  EXPECT_EQ(stats["totals"]["duplicates"], 0) << stats["totals"].dump();
  // A figure, not an assertion (the machine is shared): the bound is 18 s (900 at 50/s).
  std::printf("3 nodes on %s, 900 messages, 90 channels: %.1f s, %d 429s (%d global), %d early\n",
              store, seconds, stats["totals"]["rate_limited"].get<int>(),
              stats["totals"]["rate_limited_global"].get<int>(),
              stats["totals"]["early"].get<int>());
  std::printf("accepted per second: %s\nlagging: %s\n", Rates(t.per_second_).c_str(),
              t.lagging_.c_str());
}

// Issue 16's second done-when (and issue 36's): the same with the budget store killed for 5 s in
// the middle (`stop`, then `start`); every message is delivered and at most 3 429s are paid
// (local_share paces each node at a third), kAllowedAfterStall more in a run that stalled.
void ExpectStoreOutageMidRunDeliversEverything(ClusterTest& t, const char* store,
                                               const std::function<void()>& stop,
                                               const std::function<bool()>& start_again) {
  t.StartNodes(3);
  StallWatch stalls;
  const SteadyTime start = t.clock_.Now();
  t.PostRoundRobin(900, 90);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  stop();
  // Every node sees the outage and says so.
  for (int port : t.ports_) {
    bool down = false;
    for (int i = 0; i < 250 && !down; ++i) {
      down = HttpCallAs(kAdminToken, port, "GET", "/metrics")
                 .body.find("relay_egress_budget_store_up 0") != std::string::npos;
      if (!down) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    EXPECT_TRUE(down) << port;
    EXPECT_EQ(HttpCall(port, "GET", "/readyz").status, 200);
  }
  std::this_thread::sleep_for(std::chrono::seconds(5));
  ASSERT_TRUE(start_again());
  json stats = t.WaitAccepted(900);
  const double seconds = std::chrono::duration<double>(t.clock_.Now() - start).count();
  EXPECT_EQ(stats["totals"]["accepted"], 900) << stats["totals"].dump();
  const int64_t stalled_ms = LongestStallMs(stalls, stats);
  EXPECT_LE(stats["totals"]["rate_limited"].get<int>(),
            3 + (stalled_ms > StallWatch::kJudgedMs ? kAllowedAfterStall : 0))
      << stats["totals"].dump() << ", longest stall " << stalled_ms << " ms";
  EXPECT_EQ(stats["totals"]["duplicates"], 0) << stats["totals"].dump();
  // Back on shared budgets by themselves.
  for (int port : t.ports_) {
    bool up = false;
    for (int i = 0; i < 250 && !up; ++i) {
      up = HttpCallAs(kAdminToken, port, "GET", "/metrics")
               .body.find("relay_egress_budget_store_up 1") != std::string::npos;
      if (!up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    EXPECT_TRUE(up) << port;
  }
  std::printf("3 nodes, %s down 5 s: %.1f s, %d 429s (%d global), %d early\n", store, seconds,
              stats["totals"]["rate_limited"].get<int>(),
              stats["totals"]["rate_limited_global"].get<int>(),
              stats["totals"]["early"].get<int>());
}

// Verifies issue 16's first done-when over Redis.
TEST_F(ClusterTest, ThreeNodesShareOneDiscordToken) {
  ExpectThreeNodesShareOneToken(*this, "Redis");
}

// Verifies issue 16's second done-when: Redis killed for 5 s mid-run.
TEST_F(ClusterTest, RedisOutageMidRunDeliversEverything) {
  ExpectStoreOutageMidRunDeliversEverything(
      *this, "Redis", [&] { redis_.Stop(); }, [&] { return redis_.Start(); });
}

// Verifies that Discord's invalid-request count of a bot token is every node's together: with the
// token stopped at 6, two nodes each send 4 requests the platform answers 403 (8 in all); a node
// stops the token though neither reached 6 alone, so fewer than 8 go out.
TEST_F(ClusterTest, InvalidRequestsCountOverEveryNode) {
  // Missing Access: a permanent failure that neither disables the channel nor the token.
  sim_.Configure(
      {{"discord",
        {{"faults",
          {{"status", 403}, {"body", R"({"message":"Missing Access","code":50001})"}}}}}});
  extra_server_ = "discord_invalid_request_stop = 6\n";
  StartNodes(2);
  PostRoundRobin(8, 8);
  int64_t stops = 0;
  for (int waited = 0; waited < 30'000 && stops == 0; waited += 50) {  // liveness only
    stops = TokenStops(ports_[0]) + TokenStops(ports_[1]);
    if (stops == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  EXPECT_GE(stops, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const json stats = sim_.Stats();
  EXPECT_GE(stats["totals"]["requests"].get<int>(), 6) << stats["totals"].dump();
  EXPECT_LT(stats["totals"]["requests"].get<int>(), 8) << stats["totals"].dump();
}

// Verifies that an operator override sent to one node is in force on every node within 1 s
// (shared through the budget store), and that clearing it is shared as well.
void ClusterTest::OverridesReachEveryNodeWithinASecond() {
  StartNodes(3);
  const std::string path = "/api/admin/tenants/acme/rate_limits";
  auto in_force = [&](int port, int64_t limit) {
    json got = json::parse(HttpCallAs(kAdminToken, port, "GET", path).body, nullptr, false);
    if (got.is_discarded() || !got.contains("rate_limits")) {
      return false;
    }
    const json& egress = got["rate_limits"]["tenant_egress"];
    return limit < 0 ? !egress["overridden"].get<bool>()
                     : egress["overridden"].get<bool>() && egress["limit"] == limit;
  };
  for (const int64_t limit : {int64_t{7}, int64_t{-1}}) {
    const json body =
        limit < 0
            ? json{{"rate_limits", json::object()}}
            : json{{"rate_limits",
                    {{"tenant_egress", {{"limit", limit}, {"scale_ms", 1000}, {"burst", 1}}}}}};
    const SteadyTime sent = clock_.Now();
    TestResponse put = HttpCallAs(kAdminToken, ports_[1], "PUT", path, body.dump());
    ASSERT_EQ(put.status, 200) << put.body;
    for (int port : ports_) {
      bool seen = false;
      while (!seen && clock_.Now() - sent < std::chrono::seconds(10)) {
        seen = in_force(port, limit);
        if (!seen) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
      ASSERT_TRUE(seen) << "port " << port << " never saw limit " << limit;
    }
    const double seconds = std::chrono::duration<double>(clock_.Now() - sent).count();
    // The contract is 1 s; a loaded CI machine gets some slack before this fails.
    EXPECT_LT(seconds, 2.0);
    std::printf("override (limit %lld) on every node after %.3f s\n", static_cast<long long>(limit),
                seconds);
  }
}

// Verifies that a pause made on one node is in force on every node within a second or two
// (shared through the budget store; each node stores it): nothing of the paused tenant's Discord is
// sent by any node while it holds, and a resume sent to another node lets all of it go, once each.
void ClusterTest::PauseHoldsOnEveryNodeAndResumesFromAnother() {
  StartNodes(3);
  auto pauses_on = [&](int port) {
    json got =
        json::parse(HttpCallAs(kAdminToken, port, "GET", "/api/admin/pauses").body, nullptr, false);
    return got.is_object() && got["pauses"].is_array() ? got["pauses"].size() : size_t{99};
  };
  auto wait_all = [&](size_t count, const SteadyTime since) {
    for (int port : ports_) {
      while (pauses_on(port) != count && clock_.Now() - since < std::chrono::seconds(10)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      ASSERT_EQ(pauses_on(port), count) << "port " << port;
    }
    const double seconds = std::chrono::duration<double>(clock_.Now() - since).count();
    EXPECT_LT(seconds, 3.0);  // settings_poll is 250 ms; a loaded CI machine gets slack
    std::printf("%zu pause(s) on every node after %.3f s\n", count, seconds);
  };
  const SteadyTime paused_at = clock_.Now();
  TestResponse created = HttpCallAs(kAdminToken, ports_[1], "POST", "/api/admin/pauses",
                                    R"({"tenant":"acme","platform":"discord","reason":"drill"})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.Json()["id"];
  wait_all(1, paused_at);
  PostRoundRobin(30, 6);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(sim_.Stats()["totals"]["requests"], 0) << sim_.Stats()["totals"].dump();
  const SteadyTime resumed_at = clock_.Now();
  TestResponse resumed =
      HttpCallAs(kAdminToken, ports_[2], "DELETE", "/api/admin/pauses/" + id, "");
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  wait_all(0, resumed_at);
  const json stats = WaitAccepted(30);
  EXPECT_EQ(stats["totals"]["accepted"], 30);
  EXPECT_EQ(stats["totals"]["duplicates"], 0);
}

// Verifies that what one node's header-less 429s teach it (LINE's hidden 20/s on a channel
// configured at 2,000/s) paces the other nodes at once. Three nodes sending 100 pushes each to
// one channel at the same time: the requests all three send before any answer are refused (about
// 56), and then the shared pace holds. Each node finding the limit on its own instead took
// 32 s with 101-107 429s (the slower nodes kept spending the shared meter at their own pace);
// shared, 15.8-16.3 s with 58-59 when it landed. It now takes 18-30 s with 8-22 429s: a node's
// slow-start floor (its share of the first window) is shared as an estimate (docs/pacing.md,
// "Shared learning"). Only the 429s are asserted.
void ClusterTest::AdaptivePaceReachesTheOtherNodes() {
  sim_.Configure({{"line", {{"rate_per_s", 20}}}});
  StartNodes(3);
  const SteadyTime start = clock_.Now();
  for (size_t node = 0; node < 3; ++node) {
    PostLine(node, 100, 10);
  }
  const json stats = WaitAccepted(300);
  const double seconds = std::chrono::duration<double>(clock_.Now() - start).count();
  const int throttled = stats["totals"]["rate_limited"].get<int>();
  std::printf("LINE at a hidden 20/s, 3 nodes x 100 pushes to one channel: %.1f s, %d 429s\n",
              seconds, throttled);
  std::printf("accepted per second: %s\n", Rates(per_second_).c_str());
  EXPECT_LE(throttled, 80) << stats["totals"].dump();
  EXPECT_EQ(stats["totals"]["accepted"], 300) << stats["totals"].dump();
  // Each node applied what another learned (without the share the 429s alone stay under the
  // bound: 42 in one run).
  for (int port : ports_) {
    const std::string metrics = HttpCallAs(kAdminToken, port, "GET", "/metrics").body;
    const size_t at = metrics.find("relay_egress_learned_updates_total{direction=\"applied\"} ");
    ASSERT_NE(at, std::string::npos) << "port " << port;
    EXPECT_NE(metrics.compare(at, metrics.find('\n', at) - at,
                              "relay_egress_learned_updates_total{direction=\"applied\"} 0"),
              0)
        << "port " << port << " applied nothing another node learned";
  }
  EXPECT_EQ(stats["totals"]["duplicates"], 0) << stats["totals"].dump();
}

TEST_F(ClusterTest, OverridesReachEveryNodeWithinASecond) {
  OverridesReachEveryNodeWithinASecond();
}
TEST_F(ClusterTest, PauseHoldsOnEveryNodeAndResumesFromAnother) {
  PauseHoldsOnEveryNodeAndResumesFromAnother();
}
TEST_F(ClusterTest, AdaptivePaceReachesTheOtherNodes) { AdaptivePaceReachesTheOtherNodes(); }

// Verifies hold: while Redis is down nothing paced leaves, /readyz stays 200, and everything goes
// once Redis is back.
TEST_F(ClusterTest, HoldSendsNothingWhileRedisIsDown) {
  redis_.Stop();
  nodes_.push_back(std::make_unique<ChildProcess>());
  const std::string config = dir_.Sub("hold.toml");
  std::ofstream(config) << "[server]\nadmin_token = \"" << kAdminToken
                        << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub("hold")
                        << "\"\n[platforms.discord]\nbase_url = \"" << sim_.BaseUrl() << "\"\n"
                        << "[cluster]\nredis_url = \"" << redis_.Url()
                        << "\"\non_redis_down = \"hold\"\n"
                        << "[tenants.acme.credentials.dbot]\nplatform = \"discord\"\n"
                        << "token = \"bot-acme\"\n";
  const int port = nodes_.back()->Start(
      BuildDir() + "/relay-egress",
      {"serve", "--config", config, "--profiles-dir", SourceDir() + "/config/profiles"});
  ASSERT_NE(port, 0) << nodes_.back()->error();
  ports_.push_back(port);
  PostRoundRobin(10, 2);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(sim_.Stats()["totals"]["requests"], 0);
  const std::string metrics = HttpCallAs(kAdminToken, port, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("relay_egress_budget_store_up 0"), std::string::npos);
  EXPECT_EQ(HttpCall(port, "GET", "/readyz").status, 200);
  ASSERT_TRUE(redis_.Start()) << redis_.error();
  json stats = WaitAccepted(10, 60'000);
  EXPECT_EQ(stats["totals"]["accepted"], 10);
  EXPECT_EQ(stats["totals"]["rate_limited"], 0);
}

// The same nodes with their meters and parks in one DynamoDB table (issue 36): dynalite on
// loopback, the credentials from a shared credentials file, no Redis named.
class DynamoClusterTest : public ClusterTest {
 public:
  void SetUp() override {
    if (DynaliteServer::Binary().empty()) {
      GTEST_SKIP() << "dynalite is not installed (./dev test installs it)";
    }
    ASSERT_NE(dynalite_.port(), 0) << dynalite_.error();
    std::ofstream(dir_.Sub("aws-credentials"))
        << "[default]\naws_access_key_id = AKIDTEST\naws_secret_access_key = test-secret\n";
    StartSim();
  }

  std::string SharedStoreLines() override {
    return "budget_store = \"dynamodb\"\ndynamodb_table = \"relay-egress-budgets\"\n"
           "dynamodb_region = \"us-east-1\"\ndynamodb_endpoint = \"" +
           dynalite_.Url() + "\"\ndynamodb_create_table = true\ndynamodb_credentials_file = \"" +
           dir_.Sub("aws-credentials") + "\"\n";
  }

  DynaliteServer dynalite_;
};

// Verifies issue 36's first done-when: three nodes sharing one bot token through DynamoDB.
TEST_F(DynamoClusterTest, ThreeNodesShareOneDiscordToken) {
  ExpectThreeNodesShareOneToken(*this, "DynamoDB");
}

// Verifies issue 36's second done-when: DynamoDB unreachable for 5 s mid-run (dynalite killed;
// it comes back empty and the nodes make the table again).
TEST_F(DynamoClusterTest, StoreOutageMidRunDeliversEverything) {
  ExpectStoreOutageMidRunDeliversEverything(
      *this, "DynamoDB", [&] { dynalite_.Stop(); }, [&] { return dynalite_.Start(); });
}

// Verifies that overrides, pauses and what header-less 429s taught reach every node through the
// DynamoDB table as they do through Redis (DynamoDbSharedSettings, DynamoDbLearnedBudgets).
TEST_F(DynamoClusterTest, OverridesReachEveryNodeWithinASecond) {
  OverridesReachEveryNodeWithinASecond();
}
TEST_F(DynamoClusterTest, PauseHoldsOnEveryNodeAndResumesFromAnother) {
  PauseHoldsOnEveryNodeAndResumesFromAnother();
}
TEST_F(DynamoClusterTest, AdaptivePaceReachesTheOtherNodes) { AdaptivePaceReachesTheOtherNodes(); }

}  // namespace
}  // namespace egress
