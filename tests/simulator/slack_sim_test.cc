#include "tests/simulator/slack_sim.h"

#include <chrono>

#include <gtest/gtest.h>

#include "tests/simulator/sim_test_requests.h"

namespace egress::sim {
namespace {

using std::chrono::milliseconds;

SimRequest PostMessage(const std::string& token, const std::string& channel,
                       const std::string& extra = "") {
  return Post("/api/chat.postMessage",
              R"({"channel":")" + channel + R"(","text":"hi")" + extra + "}",
              {{"authorization", "Bearer " + token}});
}

// Verifies the per-channel burst, then a 429 with integer Retry-After that is enforced, and
// that a request inside the Retry-After counts as early.
TEST(SlackSimTest, ChannelBurstThen429WithRetryAfter) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  for (int i = 0; i < 3; ++i) {
    SimResponse r = sim->Handle(PostMessage("xoxb-1", "C1"));
    EXPECT_EQ(r.status, 200) << i;
    EXPECT_EQ(BodyOf(r)["ok"], true);
  }
  SimResponse limited = sim->Handle(PostMessage("xoxb-1", "C1"));
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(HeaderOf(limited, "Retry-After"), "1");
  EXPECT_EQ(BodyOf(limited)["error"], "ratelimited");
  EXPECT_EQ(sim->Handle(PostMessage("xoxb-1", "C2")).status, 200);  // other channel unaffected
  clock.Advance(milliseconds(999));
  EXPECT_EQ(sim->Handle(PostMessage("xoxb-1", "C1")).status, 429);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(sim->Handle(PostMessage("xoxb-1", "C1")).status, 200);
  nlohmann::json c1 = StatsOf(*sim, "slack:xoxb-1:C1");
  EXPECT_EQ(c1["requests"], 6);
  EXPECT_EQ(c1["accepted"], 4);
  EXPECT_EQ(c1["rate_limited"], 2);
  EXPECT_EQ(c1["early"], 1);
}

// Verifies the workspace limit parks every channel of the token, and not other tokens.
TEST(SlackSimTest, WorkspaceLimitParksAllChannels) {
  FakeClock clock;
  auto sim = MakeSimulator(
      clock, R"({"slack":{"workspace_rate_per_s":1,"workspace_burst":2,"retry_after_s":30}})");
  EXPECT_EQ(sim->Handle(PostMessage("t", "A")).status, 200);
  EXPECT_EQ(sim->Handle(PostMessage("t", "B")).status, 200);
  SimResponse limited = sim->Handle(PostMessage("t", "C"));
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(HeaderOf(limited, "Retry-After"), "30");
  clock.Advance(std::chrono::seconds(29));
  EXPECT_EQ(sim->Handle(PostMessage("t", "A")).status, 429);
  EXPECT_EQ(StatsOf(*sim, "slack:t:A")["early"], 1);
  EXPECT_EQ(sim->Handle(PostMessage("other", "A")).status, 200);
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(sim->Handle(PostMessage("t", "A")).status, 200);
}

// Verifies the HTTP 200 ok:false rate_limited mode, and 429 without Retry-After.
TEST(SlackSimTest, AlternativeThrottleShapes) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"slack":{"channel_burst":1,"rate_limit_mode":"ok_false"}})");
  EXPECT_EQ(sim->Handle(PostMessage("t", "A")).status, 200);
  SimResponse ok_false = sim->Handle(PostMessage("t", "A"));
  EXPECT_EQ(ok_false.status, 200);
  EXPECT_EQ(BodyOf(ok_false)["error"], "rate_limited");
  SimRequest change = Post("/_sim/config", R"({"slack":{"rate_limit_mode":"429_no_retry_after"}})");
  EXPECT_EQ(sim->Handle(change).status, 200);
  EXPECT_EQ(sim->Handle(PostMessage("t", "A")).status, 200);  // limits restart on reconfigure
  SimResponse bare = sim->Handle(PostMessage("t", "A"));
  EXPECT_EQ(bare.status, 429);
  EXPECT_EQ(HeaderOf(bare, "Retry-After"), "");
  EXPECT_EQ(StatsOf(*sim, "slack:t:A")["rate_limited"], 2);
}

// Verifies configured auth and channel errors, as HTTP 200 with Slack's codes.
TEST(SlackSimTest, ConfiguredErrors) {
  FakeClock clock;
  auto sim =
      MakeSimulator(clock, R"({"slack":{"invalid_tokens":["bad"],"missing_channels":["gone"]}})");
  EXPECT_EQ(BodyOf(sim->Handle(PostMessage("bad", "A")))["error"], "invalid_auth");
  EXPECT_EQ(BodyOf(sim->Handle(PostMessage("t", "gone")))["error"], "channel_not_found");
  EXPECT_EQ(BodyOf(sim->Handle(Post("/api/chat.postMessage", R"({"channel":"A"})")))["error"],
            "not_authed");
}

// Verifies payload msg_id repeats count duplicates and seq going backwards counts a violation.
TEST(SlackSimTest, DuplicatesAndOrderFromPayload) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"slack":{"channel_rate_per_s":0}})");
  EXPECT_EQ(sim->Handle(PostMessage("t", "A", R"(,"msg_id":"m1","seq":1)")).status, 200);
  EXPECT_EQ(sim->Handle(PostMessage("t", "A", R"(,"msg_id":"m2","seq":3)")).status, 200);
  EXPECT_EQ(sim->Handle(PostMessage("t", "A", R"(,"msg_id":"m1","seq":2)")).status, 200);
  nlohmann::json a = StatsOf(*sim, "slack:t:A");
  EXPECT_EQ(a["duplicates"], 1);
  EXPECT_EQ(a["order_violations"], 1);
  EXPECT_EQ(a["payloads"], 3);
}

// Verifies storm_after_accept answers internal_error although the message was posted.
TEST(SlackSimTest, InternalErrorAfterPosting) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"slack":{"faults":{"storm_first":1,"storm_status":200,
      "storm_after_accept":true,"body":"{\"ok\":false,\"error\":\"internal_error\"}"}}})");
  SimResponse r = sim->Handle(PostMessage("t", "A", R"(,"msg_id":"m1")"));
  EXPECT_EQ(BodyOf(r)["error"], "internal_error");
  EXPECT_EQ(sim->Handle(PostMessage("t", "A", R"(,"msg_id":"m1")")).status, 200);
  nlohmann::json a = StatsOf(*sim, "slack:t:A");
  EXPECT_EQ(a["accepted"], 2);
  EXPECT_EQ(a["duplicates"], 1);
  EXPECT_EQ(a["faults"], 1);
}

// Verifies incoming webhooks: text bodies, 429 text, archived 410.
TEST(SlackSimTest, IncomingWebhooks) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"slack":{"hook_burst":1,"archived_hooks":["T/B/old"]}})");
  SimResponse ok = sim->Handle(Post("/services/T/B/X", R"({"text":"a"})"));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "ok");
  SimResponse limited = sim->Handle(Post("/services/T/B/X", R"({"text":"a"})"));
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.body, "rate_limited");
  EXPECT_EQ(sim->Handle(Post("/services/T/B/old", R"({"text":"a"})")).status, 410);
}

}  // namespace
}  // namespace egress::sim
