#include "tests/simulator/discord_sim.h"

#include <chrono>

#include <gtest/gtest.h>

#include "tests/simulator/sim_test_requests.h"

namespace egress::sim {
namespace {

using std::chrono::milliseconds;

SimRequest CreateMessage(const std::string& channel, const std::string& body = R"({"content":"x"})",
                         const std::string& token = "bot1") {
  return Post("/api/v10/channels/" + channel + "/messages", body,
              {{"authorization", "Bot " + token}});
}

// Verifies bucket headers on a 200 and the user-scope 429 shape (int Retry-After, float body).
TEST(DiscordSimTest, BucketHeadersAndUser429) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"discord":{"bucket_limit":2,"bucket_window_ms":64570}})");
  SimResponse first = sim->Handle(CreateMessage("111"));
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(HeaderOf(first, "X-RateLimit-Limit"), "2");
  EXPECT_EQ(HeaderOf(first, "X-RateLimit-Remaining"), "1");
  EXPECT_EQ(HeaderOf(first, "X-RateLimit-Reset-After"), "64.570");
  EXPECT_EQ(HeaderOf(first, "X-RateLimit-Reset"), "1767225664.570");
  EXPECT_EQ(HeaderOf(first, "X-RateLimit-Bucket"), "a06de45e2b5c7f3d");
  EXPECT_EQ(sim->Handle(CreateMessage("111")).status, 200);
  SimResponse limited = sim->Handle(CreateMessage("111"));
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(HeaderOf(limited, "X-RateLimit-Scope"), "user");
  EXPECT_EQ(HeaderOf(limited, "X-RateLimit-Remaining"), "0");
  EXPECT_EQ(HeaderOf(limited, "Retry-After"), "65");
  nlohmann::json body = BodyOf(limited);
  EXPECT_DOUBLE_EQ(body["retry_after"].get<double>(), 64.57);
  EXPECT_EQ(body["global"], false);
  EXPECT_EQ(sim->Handle(CreateMessage("222")).status, 200);  // another channel, another bucket
  nlohmann::json stats = StatsOf(*sim, "discord:channel:111");
  EXPECT_EQ(stats["rate_limited"], 1);
  EXPECT_EQ(stats["rate_limited_global"], 0);  // the route's bucket
  EXPECT_EQ(stats["early"], 1);                // Remaining 0 on the second answer told it to wait
}

// Verifies the per-bot global limit: global 429 shape, and all channels of the token stop.
TEST(DiscordSimTest, GlobalLimitStopsTheToken) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"discord":{"global_per_s":3,"bucket_limit":100}})");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sim->Handle(CreateMessage(std::to_string(i))).status, 200);
  }
  SimResponse global = sim->Handle(CreateMessage("9"));
  EXPECT_EQ(global.status, 429);
  EXPECT_EQ(HeaderOf(global, "X-RateLimit-Global"), "true");
  EXPECT_EQ(HeaderOf(global, "X-RateLimit-Scope"), "global");
  EXPECT_EQ(HeaderOf(global, "X-RateLimit-Bucket"), "");
  EXPECT_EQ(BodyOf(global)["global"], true);
  EXPECT_EQ(BodyOf(global)["message"], "You are being rate limited.");
  EXPECT_EQ(sim->Handle(CreateMessage("8")).status, 429);
  EXPECT_EQ(StatsOf(*sim, "discord:channel:8")["early"], 1);
  EXPECT_EQ(StatsOf(*sim, "discord:channel:8")["rate_limited_global"], 1);
  EXPECT_EQ(sim->Handle(CreateMessage("8", R"({"content":"x"})", "bot2")).status, 200);
  clock.Advance(milliseconds(1000));
  EXPECT_EQ(sim->Handle(CreateMessage("8")).status, 200);
}

// Verifies nonce + enforce_nonce returns the existing message, and a nonce without it posts
// twice (a duplicate).
TEST(DiscordSimTest, NonceDedupe) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"discord":{"bucket_limit":0}})");
  const std::string enforced = R"({"content":"x","nonce":"n1","enforce_nonce":true})";
  SimResponse a = sim->Handle(CreateMessage("1", enforced));
  SimResponse b = sim->Handle(CreateMessage("1", enforced));
  EXPECT_EQ(BodyOf(a)["id"], BodyOf(b)["id"]);
  sim->Handle(CreateMessage("1", R"({"content":"x","nonce":"n2"})"));
  sim->Handle(CreateMessage("1", R"({"content":"x","nonce":"n2"})"));
  nlohmann::json stats = StatsOf(*sim, "discord:channel:1");
  EXPECT_EQ(stats["early"], 0);  // an unlimited bucket never asks for a wait
  EXPECT_EQ(HeaderOf(a, "X-RateLimit-Remaining"), "");
  EXPECT_EQ(stats["accepted"], 3);
  EXPECT_EQ(stats["duplicates_prevented"], 1);
  EXPECT_EQ(stats["duplicates"], 1);
  clock.Advance(std::chrono::seconds(300));
  EXPECT_NE(BodyOf(sim->Handle(CreateMessage("1", enforced)))["id"], BodyOf(a)["id"]);
}

// Verifies 401 for unknown tokens, 404/10015 for unknown webhooks, 204 without wait=true.
TEST(DiscordSimTest, AuthAndWebhooks) {
  FakeClock clock;
  auto sim =
      MakeSimulator(clock, R"({"discord":{"bot_tokens":["good"],"unknown_webhooks":["404"]}})");
  EXPECT_EQ(sim->Handle(CreateMessage("1", R"({"content":"x"})", "bad")).status, 401);
  EXPECT_EQ(sim->Handle(CreateMessage("1", R"({"content":"x"})", "good")).status, 200);
  SimResponse unknown = sim->Handle(Post("/api/v10/webhooks/404/tok", R"({"content":"x"})"));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(BodyOf(unknown)["code"], 10015);
  SimResponse no_wait = sim->Handle(Post("/api/v10/webhooks/5/tok", R"({"content":"x"})"));
  EXPECT_EQ(no_wait.status, 204);
  EXPECT_TRUE(no_wait.body.empty());
  EXPECT_NE(HeaderOf(no_wait, "X-RateLimit-Bucket"), "");
  SimResponse wait = sim->Handle(Post("/api/v10/webhooks/5/tok?wait=true", R"({"content":"x"})"));
  EXPECT_EQ(wait.status, 200);
  EXPECT_EQ(BodyOf(wait)["content"], "x");
}

// Verifies the shared-scope 429 mode and the changing bucket hash.
TEST(DiscordSimTest, SharedScopeAndHashChanges) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"discord":{"bucket_limit":10,"shared_429_every":3,
      "shared_retry_after_s":30,"hash_change_every":2,"bucket_hash":"h"}})");
  EXPECT_EQ(HeaderOf(sim->Handle(CreateMessage("1")), "X-RateLimit-Bucket"), "h");
  EXPECT_EQ(HeaderOf(sim->Handle(CreateMessage("1")), "X-RateLimit-Bucket"), "h");
  SimResponse shared = sim->Handle(CreateMessage("1"));
  EXPECT_EQ(shared.status, 429);
  EXPECT_EQ(HeaderOf(shared, "X-RateLimit-Scope"), "shared");
  EXPECT_EQ(HeaderOf(shared, "X-RateLimit-Remaining"), "8");
  EXPECT_EQ(HeaderOf(shared, "Retry-After"), "30");
  EXPECT_EQ(HeaderOf(shared, "X-RateLimit-Bucket"), "h-1");
}

// Verifies the sublimit mode: a user-scope 429 while the bucket still shows Remaining > 0.
TEST(DiscordSimTest, SublimitWhileRemaining) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"discord":{"bucket_limit":10,"sublimit_429_every":2,
      "sublimit_retry_after_s":1.5}})");
  EXPECT_EQ(sim->Handle(CreateMessage("1")).status, 200);
  SimResponse sub = sim->Handle(CreateMessage("1"));
  EXPECT_EQ(sub.status, 429);
  EXPECT_EQ(HeaderOf(sub, "X-RateLimit-Scope"), "user");
  EXPECT_EQ(HeaderOf(sub, "X-RateLimit-Remaining"), "9");
  EXPECT_EQ(HeaderOf(sub, "Retry-After"), "2");
  EXPECT_DOUBLE_EQ(BodyOf(sub)["retry_after"].get<double>(), 1.5);
}

}  // namespace
}  // namespace egress::sim
