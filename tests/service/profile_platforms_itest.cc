// Issue 30's profile platforms as a user runs them: one `relay-egress serve` process with the
// shipped profiles (config/profiles: telegram.toml and teams.toml, no C++ naming them) against
// the platform simulator over loopback, the platforms' documented limits set in the simulator.
// The bounds are the issue's; the figures are printed.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dispatcher/base/clock.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";

class ProfilePlatformsTest : public ::testing::Test {
 protected:
  // A fresh simulator with `sim_config`.
  void StartSim(const json& sim_config) {
    sim_ = std::make_unique<SimProcess>();
    ASSERT_TRUE(sim_->Start(SimWire::kHttp).ok());
    const json merged = sim_->Configure(sim_config);
    ASSERT_FALSE(merged.contains("error")) << merged.dump();
  }

  // A node whose config ends with `extra`; `args` are more command-line arguments.
  void StartNode(const std::string& extra, std::vector<std::string> args = {}) {
    const std::string config = dir_.Sub("node.toml");
    std::ofstream(config) << "[server]\nadmin_token = \"" << kAdminToken
                          << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub("store")
                          << "\"\n"
                          << extra;
    node_ = std::make_unique<ChildProcess>();
    std::vector<std::string> all = {"serve", "--config", config, "--profiles-dir",
                                    SourceDir() + "/config/profiles"};
    all.insert(all.end(), args.begin(), args.end());
    port_ = node_->Start(BuildDir() + "/relay-egress", all);
    ASSERT_NE(port_, 0) << node_->error();
  }

  SteadyTime Post(const json& deliveries) {
    TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/batch",
                                json{{"deliveries", deliveries}}.dump());
    EXPECT_EQ(r.status, 202) << r.body;
    return clock_.Now();
  }

  // Waits (bounded, for liveness only) until the simulator accepted `total`.
  json WaitAccepted(int total, int timeout_ms) {
    json stats;
    const SteadyTime until = clock_.Now() + Millis(timeout_ms);
    while (clock_.Now() < until) {
      stats = sim_->Stats();
      if (stats["totals"]["accepted"].get<int>() >= total) {
        return stats;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "timed out; last stats: " << stats["totals"].dump() << "\ndestinations: "
                  << HttpCallAs(kAdminToken, port_, "GET", "/v1/destinations?tenant=acme", "").body;
    return stats;
  }

  // The deliveries of the tenant in `state`.
  json DeliveriesIn(const std::string& state) {
    TestResponse r = HttpCallAs(kAdminToken, port_, "GET",
                                "/v1/deliveries?tenant=acme&limit=100&state=" + state, "");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false)["deliveries"];
  }

  double Seconds(SteadyTime since) const {
    return std::chrono::duration<double>(clock_.Now() - since).count();
  }

  SystemClock clock_;
  TempDir dir_;
  std::unique_ptr<SimProcess> sim_;
  std::unique_ptr<ChildProcess> node_;
  int port_ = 0;
};

// Verifies the issue's Telegram case: 200 messages over 20 chats plus 12 over 2 groups, an
// ordering key per chat, against Telegram's documented limits (1/s per chat, 20 per minute per
// group, 30/s per bot; a 429's wait in the body): all delivered in order, at most 5 429s, none
// sent before a body retry_after passed, within 1.3x the bound those limits give (10 messages
// at 1 per second per chat: 9 s); a chat that blocked the bot ends dead with a reason.
TEST_F(ProfilePlatformsTest, TelegramPacesChatsAndGroupsFromItsProfile) {
  StartSim({{"telegram", {{"blocked_chats", {"999"}}}}});
  StartNode(
      fmt::format("[platforms.telegram]\nbase_url = \"{}\"\n"
                  "[tenants.acme.credentials.tg]\nplatform = \"telegram\"\n"
                  "token = \"123456:ABC-telegram-bot-token\"\n",
                  sim_->BaseUrl()));
  json deliveries = json::array();
  const auto add = [&](const std::string& chat, int seq) {
    deliveries.push_back({{"tenant", "acme"},
                          {"platform", "telegram"},
                          {"destination", chat},
                          {"credential", "tg"},
                          {"ordering_key", chat},
                          {"payload", {{"text", fmt::format("m{}", seq)}, {"seq", seq}}}});
  };
  for (int seq = 0; seq < 10; ++seq) {
    for (int chat = 0; chat < 20; ++chat) {
      add(std::to_string(1001 + chat), seq);
    }
  }
  for (int seq = 0; seq < 6; ++seq) {
    add("-2001", seq);
    add("-2002", seq);
  }
  const SteadyTime start = Post(deliveries);
  const json stats = WaitAccepted(212, 60'000);
  const double took = Seconds(start);
  const json& totals = stats["totals"];
  std::printf(
      "telegram: 212 delivered in %.2f s (bound 9 s), %d 429s (%d of the bot's), %d early, %d out "
      "of order\n",
      took, totals["rate_limited"].get<int>(), totals["rate_limited_global"].get<int>(),
      totals["early"].get<int>(), totals["order_violations"].get<int>());
  EXPECT_EQ(totals["accepted"].get<int>(), 212);
  EXPECT_EQ(totals["order_violations"].get<int>(), 0);
  EXPECT_LE(totals["rate_limited"].get<int>(), 5);
  EXPECT_EQ(totals["early"].get<int>(), 0);
  EXPECT_LE(took, 1.3 * 9.0);
  // The chat that blocked the bot: dead with the profile's reason, not retried.
  Post(json::array({{{"tenant", "acme"},
                     {"platform", "telegram"},
                     {"destination", "999"},
                     {"credential", "tg"},
                     {"payload", {{"text", "hello?"}}}}}));
  json dead;
  for (int i = 0; i < 250 && (dead.is_null() || dead.empty()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    dead = DeliveriesIn("dead");
  }
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_NE(dead[0]["reason"].get<std::string>().find("bot_blocked"), std::string::npos)
      << dead[0].dump();
}

// Verifies the issue's Teams case: 3 conversations x 40 messages under the four documented
// windows per conversation (7/1 s, 8/2 s, 60/30 s, 1,800/h) with OAuth2 tokens expiring every
// 20 s and every 20th activity answered 412, an ordering key per conversation: at most 3 429s,
// none early, no request with an expired token, the 412s retried and delivered in order, within
// 1.3x the bound (40 at 8 per 2 s: about 10 s).
TEST_F(ProfilePlatformsTest, TeamsFetchesTokensAndHoldsEveryWindow) {
  StartSim(
      {{"teams",
        {{"clients", {{"app-id", "app-secret"}}}, {"token_ttl_s", 20}, {"fail_412_every", 20}}}});
  StartNode(
      fmt::format("[platforms.teams]\nbase_url = \"{0}\"\n"
                  "[platforms.teams.oauth2]\n"
                  "token_url = \"{0}/botframework.com/oauth2/v2.0/token\"\n"
                  "[tenants.acme.credentials.bot]\nplatform = \"teams\"\n"
                  "client_id = \"app-id\"\nclient_secret = \"app-secret\"\n",
                  sim_->BaseUrl()));
  json deliveries = json::array();
  for (int seq = 0; seq < 40; ++seq) {
    for (int c = 0; c < 3; ++c) {
      deliveries.push_back(
          {{"tenant", "acme"},
           {"platform", "teams"},
           {"destination", fmt::format("19:conv{}@thread.tacv2", c)},
           {"credential", "bot"},
           // Order through the 412s' retries is what an ordering key promises.
           {"ordering_key", fmt::format("conv{}", c)},
           {"payload", {{"type", "message"}, {"text", fmt::format("m{}", seq)}, {"seq", seq}}}});
    }
  }
  const SteadyTime start = Post(deliveries);
  const json stats = WaitAccepted(120, 60'000);
  const double took = Seconds(start);
  const json& totals = stats["totals"];
  const int tokens = stats["destinations"]["teams-token:app-id"]["tokens_issued"].get<int>();
  std::printf(
      "teams: 120 delivered in %.2f s (bound 10 s), %d 429s, %d early, %d expired-token "
      "requests, %d tokens, %d out of order\n",
      took, totals["rate_limited"].get<int>(), totals["early"].get<int>(),
      totals["expired_tokens"].get<int>(), tokens, totals["order_violations"].get<int>());
  EXPECT_EQ(totals["accepted"].get<int>(), 120);
  EXPECT_LE(totals["rate_limited"].get<int>(), 3);
  EXPECT_EQ(totals["early"].get<int>(), 0);
  EXPECT_EQ(totals["expired_tokens"].get<int>(), 0);
  EXPECT_EQ(totals["order_violations"].get<int>(), 0);
  EXPECT_GE(tokens, 1);
  EXPECT_LE(took, 1.3 * 10.0);
}

// A made-up chat API described by a profile only: its own header names for limit, left and reset
// (the window's end in epoch milliseconds), its quota error a 400 with the wait in the body.
constexpr char kAcmeProfile[] = R"toml(
[platforms.acme_chat]
max_in_flight_per_destination = 1

[platforms.acme_chat.request]
url = "{base_url}/acme/v2/rooms/{destination}/messages"
headers = { "X-Acme-Key" = "{credential.token}" }
destination_chars = "a-z0-9-"

[platforms.acme_chat.response]
success_status = [200]
ref_pointer = "/data/id"
error_pointer = "/error/code"
limit_header = "X-Acme-Quota-Limit"
remaining_header = "X-Acme-Quota-Left"
reset_header = "X-Acme-Quota-Reset"
reset_unit = "epoch_milliseconds"
retry_after_pointer = "/error/retry_in_ms"
retry_after_unit = "milliseconds"

[[platforms.acme_chat.rules]]
status = 400
body_contains = "quota_exceeded"
action = "throttle"
reason = "quota_exceeded"

[[platforms.acme_chat.scopes]]
budget = "acme_chat_room"
key = ["credential", "destination"]

[budgets.acme_chat_room]
limit = 100
scale_ms = 1000
burst = 1
)toml";

// Verifies issue 30's operator platform: a profile for a made-up API (its own header names, a
// reset in epoch milliseconds, a quota error in a 400's body) written into a profiles directory
// of the operator's, with the service started on it: 30 messages over 2 rooms whose hidden limit
// is 5 per 2 s are paced by what the headers say, so none meets the quota answer, in order.
TEST_F(ProfilePlatformsTest, OperatorsOwnPlatformIsPacedBeforeAnyQuotaAnswer) {
  StartSim({{"acme", {{"room_limit", 5}, {"room_window_ms", 2000}, {"keys", {"acme-key-1"}}}}});
  const std::string profiles = dir_.Sub("profiles.d");
  std::filesystem::create_directories(profiles);
  std::ofstream(profiles + "/acme_chat.toml") << kAcmeProfile;
  StartNode(fmt::format("[platforms.acme_chat]\nbase_url = \"{}\"\n"
                        "[tenants.acme.credentials.ak]\nplatform = \"acme_chat\"\n"
                        "token = \"acme-key-1\"\n",
                        sim_->BaseUrl()),
            {"--extra-profiles-dir", profiles});
  json deliveries = json::array();
  for (int seq = 0; seq < 15; ++seq) {
    for (const char* room : {"room-a", "room-b"}) {
      deliveries.push_back({{"tenant", "acme"},
                            {"platform", "acme_chat"},
                            {"destination", room},
                            {"credential", "ak"},
                            {"payload", {{"body", fmt::format("m{}", seq)}, {"seq", seq}}}});
    }
  }
  const SteadyTime start = Post(deliveries);
  const json stats = WaitAccepted(30, 60'000);
  const double took = Seconds(start);
  const json& totals = stats["totals"];
  std::printf(
      "acme_chat: 30 delivered in %.2f s (15 per room at 5 per 2 s: 3 windows), %d quota "
      "answers, %d early, %d out of order\n",
      took, totals["rate_limited"].get<int>(), totals["early"].get<int>(),
      totals["order_violations"].get<int>());
  EXPECT_EQ(totals["accepted"].get<int>(), 30);
  EXPECT_EQ(totals["rate_limited"].get<int>(), 0);
  EXPECT_EQ(totals["early"].get<int>(), 0);
  EXPECT_EQ(totals["order_violations"].get<int>(), 0);
  // Three windows per room (the first one partial, as the windows are aligned on the clock):
  // past two window ends, so more than 2 s (unpaced, the budget's 100/s would take 0.3 s), and
  // at most three windows and a little.
  EXPECT_GE(took, 2.0);
  EXPECT_LE(took, 7.0);
}

}  // namespace
}  // namespace egress
