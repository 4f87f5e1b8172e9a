#include "tests/simulator/hook_sim.h"

#include <chrono>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/webhook_signature.h"
#include "tests/simulator/sim_test_requests.h"

namespace egress::sim {
namespace {

constexpr const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* kRotated = "whsec_c2Vjb25kIHNlY3JldCBvZiB0aGlydHktdHdvIGJ5dGVzISE=";

SimRequest Signed(const FakeClock& clock, const std::string& name, const std::string& id,
                  const std::vector<std::string>& secrets, const std::string& body = "{}") {
  std::vector<adapters::WebhookKey> keys;
  for (const std::string& s : secrets) {
    keys.push_back(adapters::ParseWebhookSecret(s).value());
  }
  auto headers = adapters::SignWebhook(keys, id, clock.WallNow(), body).value();
  return Post("/hooks/" + name, body,
              {{"webhook-id", headers.id},
               {"webhook-timestamp", headers.timestamp},
               {"webhook-signature", headers.signature}});
}

// Verifies signatures are checked when secrets are configured, including during a rotation,
// and that a stale timestamp is refused.
TEST(HookSimTest, VerifiesStandardWebhooksSignatures) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, std::string(R"({"hooks":{"signed":{"secrets":[")") + kSecret +
                                      "\",\"" + kRotated + "\"]}}}");
  EXPECT_EQ(sim->Handle(Signed(clock, "signed", "m1", {kSecret})).status, 200);
  EXPECT_EQ(sim->Handle(Signed(clock, "signed", "m2", {kRotated, kSecret})).status, 200);
  SimRequest tampered = Signed(clock, "signed", "m3", {kSecret}, R"({"a":1})");
  tampered.body = R"({"a": 1})";
  EXPECT_EQ(sim->Handle(tampered).status, 401);
  SimRequest stale = Signed(clock, "signed", "m4", {kSecret});
  clock.Advance(std::chrono::seconds(301));
  EXPECT_EQ(sim->Handle(stale).status, 401);
  EXPECT_EQ(sim->Handle(Post("/hooks/open", "{}")).status, 200);  // no secrets: not checked
  EXPECT_EQ(StatsOf(*sim, "hook:signed")["signature_failures"], 2);
}

// Verifies a repeated webhook-id is answered 200 and counted as a duplicate, not accepted.
TEST(HookSimTest, DedupesByWebhookId) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  SimRequest req = Post("/hooks/a", "{}", {{"webhook-id", "msg_1"}});
  EXPECT_EQ(sim->Handle(req).status, 200);
  EXPECT_EQ(sim->Handle(req).status, 200);
  nlohmann::json stats = StatsOf(*sim, "hook:a");
  EXPECT_EQ(stats["accepted"], 1);
  EXPECT_EQ(stats["duplicates"], 1);
}

// Verifies the receiver's own limit: 429 with an HTTP-date Retry-After, enforced until then.
TEST(HookSimTest, RateLimitWithHttpDate) {
  FakeClock clock;  // 2026-01-01T00:00:00Z
  auto sim = MakeSimulator(
      clock, R"({"hooks":{"a":{"rate_per_s":0.5,"burst":1,"retry_after_format":"date"}}})");
  EXPECT_EQ(sim->Handle(Post("/hooks/a", "{}")).status, 200);
  SimResponse limited = sim->Handle(Post("/hooks/a", "{}"));
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(HeaderOf(limited, "Retry-After"), "Thu, 01 Jan 2026 00:00:02 GMT");
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(sim->Handle(Post("/hooks/a", "{}")).status, 429);
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(sim->Handle(Post("/hooks/a", "{}")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "hook:a")["early"], 1);
}

// Verifies configured faults: 410, a 5xx storm that ends, a reset, a slow response, and that a
// 503 Retry-After makes earlier requests count as early.
TEST(HookSimTest, ConfiguredFaults) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"hooks":{
      "gone": {"faults": {"status": 410}},
      "storm": {"faults": {"reset_first": 1, "storm_first": 2, "storm_status": 503,
                           "retry_after_s": 120}},
      "slow": {"faults": {"delay_ms": 1500}}}})");
  EXPECT_EQ(sim->Handle(Post("/hooks/gone", "{}")).status, 410);
  EXPECT_TRUE(sim->Handle(Post("/hooks/storm", "{}")).reset_connection);
  SimResponse storm = sim->Handle(Post("/hooks/storm", "{}"));
  EXPECT_EQ(storm.status, 503);
  EXPECT_EQ(HeaderOf(storm, "Retry-After"), "120");
  EXPECT_EQ(sim->Handle(Post("/hooks/storm", "{}")).status, 503);  // early
  clock.Advance(std::chrono::seconds(120));
  EXPECT_EQ(sim->Handle(Post("/hooks/storm", "{}")).status, 200);
  SimResponse slow = sim->Handle(Post("/hooks/slow", "{}"));
  EXPECT_EQ(slow.status, 200);
  EXPECT_EQ(slow.delay_ms, 1500);
  nlohmann::json stats = StatsOf(*sim, "hook:storm");
  EXPECT_EQ(stats["faults"], 3);
  EXPECT_EQ(stats["early"], 1);
  EXPECT_EQ(stats["accepted"], 1);
}

// Verifies /_sim/reset clears the stats and control errors are reported.
TEST(HookSimTest, ResetAndControlErrors) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  sim->Handle(Post("/hooks/a", "{}"));
  EXPECT_EQ(sim->Handle(Post("/_sim/reset", "")).status, 200);
  EXPECT_TRUE(nlohmann::json::parse(sim->StatsJson())["destinations"].empty());
  EXPECT_EQ(sim->Handle(Post("/_sim/config", R"({"hooks":{"a":{"rate":1}}})")).status, 400);
  EXPECT_EQ(sim->Handle(Post("/nowhere", "{}")).status, 404);
}

}  // namespace
}  // namespace egress::sim
