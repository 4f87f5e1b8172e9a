#include "tests/simulator/simulator.h"

#include <string>

#include <gtest/gtest.h>

#include "tests/simulator/sim_test_requests.h"

namespace egress::sim {
namespace {

// Verifies odd field types, invalid UTF-8 in paths and headers, and non-JSON bodies get answers
// (and a valid stats document) instead of exceptions.
TEST(SimulatorTest, GarbageInputNeverThrows) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  const std::string bad_utf8 = "\xff\xfe";
  EXPECT_EQ(sim->Handle(Post("/api/v10/channels/" + bad_utf8 + "/messages",
                             R"({"content":5,"nonce":[1],"enforce_nonce":"yes"})",
                             {{"authorization", "Bot " + bad_utf8}}))
                .status,
            200);
  EXPECT_EQ(sim->Handle(Post("/api/chat.postMessage", R"({"channel":"C","text":{"a":1}})",
                             {{"authorization", "Bearer " + bad_utf8}}))
                .status,
            200);
  EXPECT_EQ(
      sim->Handle(Post("/v2/bot/message/push", "not json", {{"authorization", "Bearer t"}})).status,
      400);
  EXPECT_EQ(sim->Handle(Post("/hooks/" + bad_utf8, "\x01\x02")).status, 200);
  EXPECT_EQ(sim->Handle(Post("/api/v10/webhooks/1/t", "[]")).status, 400);
  nlohmann::json stats = nlohmann::json::parse(sim->StatsJson(), nullptr, false);
  ASSERT_FALSE(stats.is_discarded());
  EXPECT_EQ(stats["totals"]["requests"], 5);
}

// Verifies Telegram and Teams requests with odd paths, ids and bodies get answers and a valid
// stats document.
TEST(SimulatorTest, GarbageTelegramAndTeamsInputNeverThrows) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  const std::string bad_utf8 = "\xff\xfe";
  EXPECT_EQ(
      sim->Handle(Post("/bot" + bad_utf8 + "/sendMessage", R"({"chat_id":[1],"text":{"a":1}})"))
          .status,
      400);
  EXPECT_EQ(sim->Handle(Post("/bot1:t/sendMessage", R"({"chat_id":99999999999999999999})")).status,
            400);
  EXPECT_EQ(sim->Handle(Post("/bot1:t/sendMessage", R"({"chat_id":5,"text":7})")).status, 400);
  EXPECT_EQ(sim->Handle(Post("/botframework.com/oauth2/v2.0/token", "client_id=%ff%fe&=&&")).status,
            400);
  EXPECT_EQ(sim->Handle(Post("/v3/conversations/%ff%zz/activities", "\x01",
                             {{"authorization", "Bearer " + bad_utf8}}))
                .status,
            401);
  nlohmann::json stats = nlohmann::json::parse(sim->StatsJson(), nullptr, false);
  ASSERT_FALSE(stats.is_discarded());
  EXPECT_EQ(stats["totals"]["errors"], 3);
}

// Verifies GET /_sim/config returns the merged document after a runtime change.
TEST(SimulatorTest, ConfigRoundTrip) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"line":{"rate_per_s":7}})");
  EXPECT_EQ(sim->Handle(Post("/_sim/config", R"({"slack":{"channel_burst":2}})")).status, 200);
  SimRequest get = Post("/_sim/config", "");
  get.method = "GET";
  nlohmann::json doc = BodyOf(sim->Handle(get));
  EXPECT_EQ(doc["line"]["rate_per_s"], 7);
  EXPECT_EQ(doc["slack"]["channel_burst"], 2);
}

}  // namespace
}  // namespace egress::sim
