#include "tests/simulator/line_sim.h"

#include <gtest/gtest.h>

#include "tests/simulator/sim_test_requests.h"

namespace egress::sim {
namespace {

constexpr const char* kKey = "123e4567-e89b-12d3-a456-426614174000";

SimRequest Push(const std::string& retry_key = "", const std::string& token = "ch1") {
  SimRequest req =
      Post("/v2/bot/message/push", R"({"to":"U1","messages":[{"type":"text","text":"a"}]})",
           {{"authorization", "Bearer " + token}});
  if (!retry_key.empty()) {
    req.headers.emplace_back("x-line-retry-key", retry_key);
  }
  return req;
}

// Verifies every response has a fresh X-Line-Request-Id and the rate 429 has no Retry-After.
TEST(LineSimTest, RequestIdsAndRateLimit) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"line":{"rate_per_s":1}})");
  SimResponse ok = sim->Handle(Push());
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(BodyOf(ok)["sentMessages"].size(), 1u);
  SimResponse limited = sim->Handle(Push());
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(BodyOf(limited)["message"], "Too Many Requests");
  EXPECT_EQ(HeaderOf(limited, "Retry-After"), "");
  EXPECT_NE(HeaderOf(ok, "X-Line-Request-Id"), "");
  EXPECT_NE(HeaderOf(ok, "X-Line-Request-Id"), HeaderOf(limited, "X-Line-Request-Id"));
  // Another endpoint of the same channel has its own limit.
  SimRequest multicast = Post("/v2/bot/message/multicast",
                              R"({"to":["U1","U2"],"messages":[{"type":"text","text":"a"}]})",
                              {{"authorization", "Bearer ch1"}});
  EXPECT_EQ(sim->Handle(multicast).status, 200);
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(sim->Handle(Push()).status, 200);
  nlohmann::json stats = StatsOf(*sim, "line:ch1");
  EXPECT_EQ(stats["payloads"], 4);  // push 1 + multicast 2 + push 1
  EXPECT_EQ(stats["rate_limited"], 1);
}

// Verifies a repeated accepted retry key gets 409 with the original request id and messages.
TEST(LineSimTest, RetryKeyConflict) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  SimResponse first = sim->Handle(Push(kKey));
  ASSERT_EQ(first.status, 200);
  SimResponse again = sim->Handle(Push(kKey));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(HeaderOf(again, "X-Line-Accepted-Request-Id"), HeaderOf(first, "X-Line-Request-Id"));
  EXPECT_EQ(BodyOf(again)["message"], "The retry key is already accepted");
  EXPECT_EQ(BodyOf(again)["sentMessages"], BodyOf(first)["sentMessages"]);
  EXPECT_EQ(sim->Handle(Push("not-a-uuid")).status, 400);
  nlohmann::json stats = StatsOf(*sim, "line:ch1");
  EXPECT_EQ(stats["accepted"], 1);
  EXPECT_EQ(stats["duplicates_prevented"], 1);
  // After the key's 24 hours the same key is accepted again: a duplicate delivery.
  clock.Advance(std::chrono::hours(24));
  EXPECT_EQ(sim->Handle(Push(kKey)).status, 200);
  EXPECT_EQ(StatsOf(*sim, "line:ch1")["duplicates"], 1);
}

// Verifies a 500 after delivery followed by a retry with the same key gets 409 (posted once).
TEST(LineSimTest, ServerErrorAfterDeliveryThenConflict) {
  FakeClock clock;
  auto sim = MakeSimulator(
      clock,
      R"({"line":{"faults":{"storm_first":1,"storm_status":500,"storm_after_accept":true}}})");
  EXPECT_EQ(sim->Handle(Push(kKey)).status, 500);
  EXPECT_EQ(sim->Handle(Push(kKey)).status, 409);
  EXPECT_EQ(StatsOf(*sim, "line:ch1")["accepted"], 1);
}

// Verifies the monthly quota 429 wording and the request validation errors.
TEST(LineSimTest, QuotaAndValidation) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"line":{"monthly_quota":1,"invalid_tokens":["bad"]}})");
  EXPECT_EQ(sim->Handle(Push()).status, 200);
  SimResponse quota = sim->Handle(Push());
  EXPECT_EQ(quota.status, 429);
  EXPECT_EQ(BodyOf(quota)["message"], "You have reached your monthly limit.");
  EXPECT_EQ(sim->Handle(Push("", "bad")).status, 401);
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 501; ++i) {
    many.push_back("U" + std::to_string(i));
  }
  nlohmann::json body = {{"to", many}, {"messages", {{{"type", "text"}, {"text", "a"}}}}};
  SimResponse too_many = sim->Handle(
      Post("/v2/bot/message/multicast", body.dump(), {{"authorization", "Bearer ch2"}}));
  EXPECT_EQ(too_many.status, 400);
  SimResponse reply_key =
      sim->Handle(Post("/v2/bot/message/reply", R"({"replyToken":"r","messages":[]})",
                       {{"authorization", "Bearer ch2"}, {"x-line-retry-key", kKey}}));
  EXPECT_EQ(reply_key.status, 400);
}

}  // namespace
}  // namespace egress::sim
