#include "tests/simulator/telegram_sim.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "tests/simulator/sim_test_requests.h"

namespace egress::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kToken = "123456:AAH-secret";

// sendMessage to `chat` (JSON text: 42, "-100123", "@news") with bot `token`.
SimRequest SendMessage(const std::string& chat, const std::string& token = kToken,
                       const std::string& extra = "") {
  return Post("/bot" + token + "/sendMessage",
              R"({"chat_id":)" + chat + R"(,"text":"hi")" + extra + "}",
              {{"content-type", "application/json"}});
}

// Checks a 429 in Telegram's shape: retry_after in the body, no Retry-After header.
void ExpectTooManyRequests(const SimResponse& r, int retry_after) {
  EXPECT_EQ(r.status, 429);
  nlohmann::json body = BodyOf(r);
  EXPECT_EQ(body["ok"], false);
  EXPECT_EQ(body["error_code"], 429);
  EXPECT_EQ(body["description"], "Too Many Requests: retry after " + std::to_string(retry_after));
  EXPECT_EQ(body["parameters"]["retry_after"], retry_after);
  EXPECT_EQ(HeaderOf(r, "Retry-After"), "");
}

// Verifies the success shape, chat ids as numbers or text, and stats keyed without the token.
TEST(TelegramSimTest, SuccessShapeAndStatsWithoutToken) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  SimResponse ok = sim->Handle(SendMessage("42"));
  ASSERT_EQ(ok.status, 200);
  nlohmann::json body = BodyOf(ok);
  EXPECT_EQ(body["ok"], true);
  EXPECT_TRUE(body["result"]["message_id"].is_number_integer());
  EXPECT_EQ(body["result"]["chat"]["id"], 42);
  EXPECT_EQ(body["result"]["chat"]["type"], "private");
  EXPECT_EQ(body["result"]["date"], 1'767'225'600);  // FakeClock's wall start, in seconds
  EXPECT_EQ(body["result"]["text"], "hi");
  SimResponse group = sim->Handle(SendMessage(R"("-1001234567890")"));
  ASSERT_EQ(group.status, 200);
  EXPECT_EQ(BodyOf(group)["result"]["chat"]["id"], -1001234567890);
  EXPECT_EQ(BodyOf(group)["result"]["chat"]["type"], "supergroup");
  EXPECT_NE(BodyOf(group)["result"]["message_id"], body["result"]["message_id"]);
  EXPECT_EQ(sim->Handle(SendMessage(R"("@news")")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "telegram:42")["accepted"], 1);
  EXPECT_EQ(StatsOf(*sim, "telegram:-1001234567890")["accepted"], 1);
  EXPECT_EQ(StatsOf(*sim, "telegram:@news")["accepted"], 1);
  EXPECT_EQ(sim->StatsJson().find("AAH-secret"), std::string::npos);
}

// Verifies the per-chat limit's 429 (retry_after in the body only), the park it starts, and a
// request inside the park answered 429 again and counted early.
TEST(TelegramSimTest, ChatLimitParksUntilBodyRetryAfter) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"telegram":{"chat_rate_per_s":0.25}})");
  EXPECT_EQ(sim->Handle(SendMessage("7")).status, 200);
  ExpectTooManyRequests(sim->Handle(SendMessage("7")), 4);
  EXPECT_EQ(sim->Handle(SendMessage("8")).status, 200);  // another chat, another limit
  // The park (4 s) repeats the time left, rounded up.
  clock.Advance(milliseconds(2500));
  ExpectTooManyRequests(sim->Handle(SendMessage("7")), 2);
  clock.Advance(milliseconds(1499));
  ExpectTooManyRequests(sim->Handle(SendMessage("7")), 1);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(sim->Handle(SendMessage("7")).status, 200);
  nlohmann::json stats = StatsOf(*sim, "telegram:7");
  EXPECT_EQ(stats["requests"], 5);
  EXPECT_EQ(stats["accepted"], 2);
  EXPECT_EQ(stats["rate_limited"], 3);
  EXPECT_EQ(stats["early"], 2);
  EXPECT_EQ(stats["rate_limited_global"], 0);
}

// Verifies chat_burst, and that the park and "early" belong to the (token, chat): another bot
// sending to the same chat is neither refused nor early.
TEST(TelegramSimTest, ChatBurstAndParkPerToken) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"telegram":{"chat_burst":3}})");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sim->Handle(SendMessage("7")).status, 200) << i;
  }
  ExpectTooManyRequests(sim->Handle(SendMessage("7")), 1);
  EXPECT_EQ(sim->Handle(SendMessage("7", "999:other")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "telegram:7")["early"], 0);
  clock.Advance(milliseconds(999));
  ExpectTooManyRequests(sim->Handle(SendMessage("7")), 1);
  EXPECT_EQ(StatsOf(*sim, "telegram:7")["early"], 1);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(sim->Handle(SendMessage("7")).status, 200);
}

// Verifies the group window applies to negative chat ids only, slides, and reports its wait.
TEST(TelegramSimTest, GroupLimitForNegativeIdsOnly) {
  FakeClock clock;
  auto sim = MakeSimulator(
      clock, R"({"telegram":{"chat_rate_per_s":0,"group_limit":3,"group_window_s":60}})");
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(sim->Handle(SendMessage("5")).status, 200) << i;  // a private chat: no group limit
  }
  EXPECT_EQ(sim->Handle(SendMessage("-5")).status, 200);
  clock.Advance(seconds(10));
  EXPECT_EQ(sim->Handle(SendMessage("-5")).status, 200);
  clock.Advance(seconds(10));
  EXPECT_EQ(sim->Handle(SendMessage("-5")).status, 200);
  ExpectTooManyRequests(sim->Handle(SendMessage("-5")), 40);  // the first leaves at 60 s
  EXPECT_EQ(sim->Handle(SendMessage("-6")).status, 200);      // another group
  clock.Advance(seconds(40));
  EXPECT_EQ(sim->Handle(SendMessage("-5")).status, 200);
  ExpectTooManyRequests(sim->Handle(SendMessage("-5")), 10);  // then the one sent at 10 s
  nlohmann::json stats = StatsOf(*sim, "telegram:-5");
  EXPECT_EQ(stats["rate_limited"], 2);
  EXPECT_EQ(stats["early"], 0);
}

// Verifies the per-bot limit across chats counts as global, and other bots are not affected.
TEST(TelegramSimTest, BotLimitAcrossChats) {
  FakeClock clock;
  auto sim = MakeSimulator(
      clock, R"({"telegram":{"chat_rate_per_s":0,"bot_rate_per_s":2,"bot_burst":2}})");
  EXPECT_EQ(sim->Handle(SendMessage("1")).status, 200);
  EXPECT_EQ(sim->Handle(SendMessage("2")).status, 200);
  ExpectTooManyRequests(sim->Handle(SendMessage("3")), 1);
  EXPECT_EQ(sim->Handle(SendMessage("3", "999:other")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "telegram:3")["rate_limited_global"], 1);
  clock.Advance(milliseconds(500));
  ExpectTooManyRequests(sim->Handle(SendMessage("3")), 1);  // parked (early)
  EXPECT_EQ(sim->Handle(SendMessage("4")).status, 200);     // a token came back after 0.5 s
  clock.Advance(milliseconds(500));
  EXPECT_EQ(sim->Handle(SendMessage("3")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "telegram:3")["early"], 1);
}

// Verifies blocked and missing chats, invalid tokens, bad bodies and unknown methods.
TEST(TelegramSimTest, ErrorAnswers) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"telegram":{"blocked_chats":["11"],
      "missing_chats":["-12"],"invalid_tokens":["bad:token"]}})");
  auto expect_error = [](const SimResponse& r, int status, const std::string& description) {
    EXPECT_EQ(r.status, status);
    EXPECT_EQ(BodyOf(r)["ok"], false);
    EXPECT_EQ(BodyOf(r)["error_code"], status);
    EXPECT_EQ(BodyOf(r)["description"], description);
  };
  expect_error(sim->Handle(SendMessage("11")), 403, "Forbidden: bot was blocked by the user");
  expect_error(sim->Handle(SendMessage(R"("-12")")), 400, "Bad Request: chat not found");
  expect_error(sim->Handle(SendMessage("13", "bad:token")), 401, "Unauthorized");
  expect_error(sim->Handle(Post("/botbad:token/getMe", "")), 401, "Unauthorized");
  expect_error(sim->Handle(Post("/bot1:t/getUpdates", "{}")), 404, "Not Found");
  expect_error(sim->Handle(Post("/bot1:t/sendMessage", R"({"text":"hi"})")), 400,
               "Bad Request: chat_id is empty");
  expect_error(sim->Handle(Post("/bot1:t/sendMessage", R"({"chat_id":"abc","text":"hi"})")), 400,
               "Bad Request: chat not found");
  expect_error(sim->Handle(Post("/bot1:t/sendMessage", R"({"chat_id":14,"text":""})")), 400,
               "Bad Request: message text is empty");
  SimResponse not_json = sim->Handle(Post("/bot1:t/sendMessage", "chat_id=1"));
  EXPECT_EQ(not_json.status, 400);
  EXPECT_FALSE(BodyOf(not_json)["description"].get<std::string>().empty());
  EXPECT_EQ(StatsOf(*sim, "telegram:11")["errors"], 1);
  EXPECT_EQ(StatsOf(*sim, "telegram:-12")["errors"], 1);
  EXPECT_EQ(StatsOf(*sim, "telegram:13")["errors"], 1);
  EXPECT_EQ(StatsOf(*sim, "telegram:14")["errors"], 1);
  EXPECT_EQ(sim->Handle(Post("/bot/sendMessage", "{}")).status, 404);
}

// Verifies faults apply per chat, and a reconfigure or reset lifts parks.
TEST(TelegramSimTest, FaultsAndReconfigure) {
  FakeClock clock;
  auto sim =
      MakeSimulator(clock, R"({"telegram":{"faults":{"storm_first":1,"storm_status":502}}})");
  EXPECT_EQ(sim->Handle(SendMessage("1")).status, 502);
  EXPECT_EQ(sim->Handle(SendMessage("1")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "telegram:1")["faults"], 1);
  ExpectTooManyRequests(sim->Handle(SendMessage("1")), 1);
  EXPECT_EQ(sim->Handle(Post("/_sim/config", R"({"telegram":{"faults":null}})")).status, 200);
  EXPECT_EQ(sim->Handle(SendMessage("1")).status, 200);
  ExpectTooManyRequests(sim->Handle(SendMessage("1")), 1);
  EXPECT_EQ(sim->Handle(Post("/_sim/reset", "")).status, 200);
  EXPECT_EQ(sim->Handle(SendMessage("1")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "telegram:1")["requests"], 1);
}

// Verifies chat ids are read as the simulator keys them.
TEST(TelegramSimTest, ChatIds) {
  EXPECT_EQ(TelegramChatId(nlohmann::json(-1001234567890)), "-1001234567890");
  EXPECT_EQ(TelegramChatId(nlohmann::json("0042")), "42");
  EXPECT_EQ(TelegramChatId(nlohmann::json("@channel")), "@channel");
  EXPECT_FALSE(TelegramChatId(nlohmann::json("12a")).has_value());
  EXPECT_FALSE(TelegramChatId(nlohmann::json("@")).has_value());
  EXPECT_FALSE(TelegramChatId(nlohmann::json(1.5)).has_value());
  EXPECT_FALSE(TelegramChatId(nlohmann::json(nullptr)).has_value());
  EXPECT_TRUE(IsTelegramGroup("-5"));
  EXPECT_FALSE(IsTelegramGroup("5"));
  EXPECT_FALSE(IsTelegramGroup("@channel"));
}

// Verifies the telegram section's defaults and its config errors.
TEST(TelegramSimTest, Config) {
  Result<SimConfig> config = ParseSimConfig("{}");
  ASSERT_TRUE(config.has_value());
  EXPECT_DOUBLE_EQ(config->telegram.chat_rate_per_s, 1.0);
  EXPECT_DOUBLE_EQ(config->telegram.chat_burst, 1.0);
  EXPECT_EQ(config->telegram.group_limit, 20);
  EXPECT_DOUBLE_EQ(config->telegram.group_window_s, 60.0);
  EXPECT_DOUBLE_EQ(config->telegram.bot_rate_per_s, 30.0);
  Result<SimConfig> typo = ParseSimConfig(R"({"telegram":{"chat_brust":2}})");
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.error().message().find("telegram.chat_brust"), std::string::npos);
  Result<SimConfig> type = ParseSimConfig(R"({"telegram":{"blocked_chats":[1]}})");
  ASSERT_FALSE(type.has_value());
  EXPECT_NE(type.error().message().find("telegram.blocked_chats"), std::string::npos);
  EXPECT_FALSE(ParseSimConfig(R"({"telegram":{"group_window_s":0}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"telegram":{"faults":{"stat":1}}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"telegram":[]})").has_value());
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  SimResponse refused = sim->Handle(Post("/_sim/config", R"({"telegram":{"chat_burst":"x"}})"));
  EXPECT_EQ(refused.status, 400);
}

}  // namespace
}  // namespace egress::sim
