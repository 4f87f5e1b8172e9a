#include "tests/simulator/teams_sim.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "tests/simulator/sim_test_requests.h"

namespace egress::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kScope = "https%3A%2F%2Fapi.botframework.com%2F.default";

SimRequest TokenRequest(const std::string& client, const std::string& secret = "s3cret",
                        const std::string& scope = kScope,
                        const std::string& grant = "client_credentials") {
  return Post("/botframework.com/oauth2/v2.0/token",
              "grant_type=" + grant + "&client_id=" + client + "&client_secret=" + secret +
                  "&scope=" + scope,
              {{"content-type", "application/x-www-form-urlencoded"}});
}

// A token for `client` (empty on failure, with the test failed).
std::string TokenFor(Simulator& sim, const std::string& client, const std::string& secret = "s") {
  SimResponse r = sim.Handle(TokenRequest(client, secret));
  EXPECT_EQ(r.status, 200) << r.body;
  return BodyOf(r).value("access_token", "");
}

SimRequest Activity(const std::string& conversation, const std::string& token,
                    const std::string& body = R"({"type":"message","text":"hi"})") {
  SimRequest req = Post("/v3/conversations/" + conversation + "/activities", body,
                        {{"content-type", "application/json"}});
  if (!token.empty()) {
    req.headers.emplace_back("authorization", "Bearer " + token);
  }
  return req;
}

// Checks a 429 in the connector's shape, with Retry-After in whole seconds.
void ExpectThrottled(const SimResponse& r, const std::string& retry_after) {
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(HeaderOf(r, "Retry-After"), retry_after);
  EXPECT_EQ(BodyOf(r)["error"]["code"], "TooManyRequests");
}

// Verifies the token answer's shape, distinct tokens, and tokens_issued.
TEST(TeamsSimTest, IssuesTokens) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  SimResponse r = sim->Handle(TokenRequest("app1"));
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json body = BodyOf(r);
  EXPECT_EQ(body["token_type"], "Bearer");
  EXPECT_EQ(body["expires_in"], 3599);
  EXPECT_EQ(body["ext_expires_in"], 3599);
  const std::string first = body["access_token"];
  EXPECT_GE(first.size(), 40u);
  EXPECT_NE(TokenFor(*sim, "app1"), first);
  nlohmann::json stats = StatsOf(*sim, "teams-token:app1");
  EXPECT_EQ(stats["requests"], 2);
  EXPECT_EQ(stats["tokens_issued"], 2);
  EXPECT_EQ(stats["accepted"], 0);  // a token is not a message
}

// Verifies the refusals of the token endpoint with configured clients.
TEST(TeamsSimTest, TokenRefusals) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"teams":{"clients":{"app1":"s3cret"}}})");
  auto expect_refused = [&](const SimRequest& req, int status, const std::string& error) {
    SimResponse r = sim->Handle(req);
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(BodyOf(r)["error"], error);
    EXPECT_FALSE(BodyOf(r)["error_description"].get<std::string>().empty());
  };
  expect_refused(TokenRequest("app1", "wrong"), 401, "invalid_client");
  expect_refused(TokenRequest("app1", ""), 401, "invalid_client");
  expect_refused(TokenRequest("app2", "s3cret"), 401, "invalid_client");
  expect_refused(TokenRequest("app1", "s3cret", "https%3A%2F%2Fgraph.microsoft.com%2F.default"),
                 400, "invalid_scope");
  expect_refused(TokenRequest("app1", "s3cret", kScope, "password"), 400, "unsupported_grant_type");
  expect_refused(Post("/botframework.com/oauth2/v2.0/token", "client_id=app1"), 400,
                 "invalid_request");
  expect_refused(Post("/botframework.com/oauth2/v2.0/token", "client_id=%zz"), 400,
                 "invalid_request");
  EXPECT_EQ(sim->Handle(TokenRequest("app1", "s3cret")).status, 200);
  nlohmann::json stats = StatsOf(*sim, "teams-token:app1");
  EXPECT_EQ(stats["errors"], 5);
  EXPECT_EQ(stats["tokens_issued"], 1);
}

// Verifies activities need a live token: missing, unknown and expired tokens get 401, and
// expired ones are counted apart.
TEST(TeamsSimTest, ActivitiesNeedALiveToken) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"teams":{"token_ttl_s":60}})");
  SimResponse missing = sim->Handle(Activity("c1", ""));
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(BodyOf(missing)["error"]["code"], "Unauthorized");
  EXPECT_EQ(sim->Handle(Activity("c1", "made-up")).status, 401);
  const std::string token = TokenFor(*sim, "app1");
  EXPECT_EQ(BodyOf(sim->Handle(TokenRequest("app1")))["expires_in"], 60);
  SimResponse ok = sim->Handle(Activity("c1", token));
  EXPECT_EQ(ok.status, 201);
  EXPECT_FALSE(BodyOf(ok)["id"].get<std::string>().empty());
  clock.Advance(milliseconds(59'999));
  EXPECT_EQ(sim->Handle(Activity("c1", token)).status, 201);
  clock.Advance(milliseconds(1));
  SimResponse expired = sim->Handle(Activity("c1", token));
  EXPECT_EQ(expired.status, 401);
  EXPECT_EQ(BodyOf(expired)["error"]["code"], "Unauthorized");
  EXPECT_EQ(sim->Handle(Activity("c1", TokenFor(*sim, "app1"))).status, 201);
  nlohmann::json stats = StatsOf(*sim, "teams:c1");
  EXPECT_EQ(stats["requests"], 6);
  EXPECT_EQ(stats["accepted"], 3);
  EXPECT_EQ(stats["errors"], 3);
  EXPECT_EQ(stats["expired_tokens"], 1);
  // A reset forgets the tokens issued before it.
  const std::string before_reset = TokenFor(*sim, "app1");
  EXPECT_EQ(sim->Handle(Post("/_sim/reset", "")).status, 200);
  EXPECT_EQ(sim->Handle(Activity("c1", before_reset)).status, 401);
  EXPECT_EQ(StatsOf(*sim, "teams:c1")["expired_tokens"], 0);
}

// Verifies Microsoft's default per-conversation windows: 7 in a second, then 8 in two.
TEST(TeamsSimTest, DefaultConversationWindows) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  const std::string token = TokenFor(*sim, "app1");
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(sim->Handle(Activity("c1", token)).status, 201) << i;
  }
  ExpectThrottled(sim->Handle(Activity("c1", token)), "1");
  EXPECT_EQ(sim->Handle(Activity("c2", token)).status, 201);  // another conversation
  clock.Advance(seconds(1));
  EXPECT_EQ(sim->Handle(Activity("c1", token)).status, 201);  // the 8th in 2 s
  ExpectThrottled(sim->Handle(Activity("c1", token)), "1");   // the 2 s window is full
}

// Verifies several windows at once: a request needs room in all, Retry-After is the longest
// wait, and requests inside it are refused again and counted early.
TEST(TeamsSimTest, EveryWindowMustHaveRoom) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"teams":{"conversation_windows":[
      {"limit":2,"window_s":1},{"limit":3,"window_s":10}]}})");
  const std::string token = TokenFor(*sim, "app1");
  EXPECT_EQ(sim->Handle(Activity("c1", token)).status, 201);
  EXPECT_EQ(sim->Handle(Activity("c1", token)).status, 201);
  ExpectThrottled(sim->Handle(Activity("c1", token)), "1");
  clock.Advance(seconds(1));
  EXPECT_EQ(sim->Handle(Activity("c1", token)).status, 201);
  ExpectThrottled(sim->Handle(Activity("c1", token)), "9");  // the 10 s window: 3 in it
  clock.Advance(seconds(5));
  ExpectThrottled(sim->Handle(Activity("c1", token)), "4");  // parked: the time left
  clock.Advance(milliseconds(3'999));
  ExpectThrottled(sim->Handle(Activity("c1", token)), "1");
  clock.Advance(milliseconds(1));
  EXPECT_EQ(sim->Handle(Activity("c1", token)).status, 201);
  nlohmann::json stats = StatsOf(*sim, "teams:c1");
  EXPECT_EQ(stats["rate_limited"], 4);
  EXPECT_EQ(stats["early"], 2);
  EXPECT_EQ(stats["accepted"], 4);
}

// Verifies the per-app windows across conversations count as global, per client.
TEST(TeamsSimTest, AppWindowAcrossConversations) {
  FakeClock clock;
  auto sim = MakeSimulator(
      clock, R"({"teams":{"conversation_windows":[],"app_windows":[{"limit":3,"window_s":1}]}})");
  const std::string token = TokenFor(*sim, "app1");
  for (const char* conversation : {"a", "b", "c"}) {
    EXPECT_EQ(sim->Handle(Activity(conversation, token)).status, 201);
  }
  ExpectThrottled(sim->Handle(Activity("d", token)), "1");
  EXPECT_EQ(StatsOf(*sim, "teams:d")["rate_limited_global"], 1);
  EXPECT_EQ(sim->Handle(Activity("d", TokenFor(*sim, "app2"))).status, 201);
  clock.Advance(seconds(1));
  EXPECT_EQ(sim->Handle(Activity("d", token)).status, 201);
  EXPECT_EQ(StatsOf(*sim, "teams:d")["early"], 0);
}

// Verifies every Nth activity gets 412, is not accepted and takes no room in the windows.
TEST(TeamsSimTest, Fail412Every) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"teams":{"fail_412_every":3,
      "conversation_windows":[{"limit":4,"window_s":60}]}})");
  const std::string token = TokenFor(*sim, "app1");
  for (int i = 1; i <= 6; ++i) {
    SimResponse r = sim->Handle(Activity("c1", token));
    EXPECT_EQ(r.status, i % 3 == 0 ? 412 : 201) << i;
    if (r.status == 412) {
      EXPECT_EQ(BodyOf(r)["error"]["code"], "PreconditionFailed");
    }
  }
  ExpectThrottled(sim->Handle(Activity("c1", token)), "60");  // 4 accepted fill the window
  nlohmann::json stats = StatsOf(*sim, "teams:c1");
  EXPECT_EQ(stats["accepted"], 4);
  EXPECT_EQ(stats["errors"], 2);
  EXPECT_EQ(stats["rate_limited"], 1);
}

// Verifies encoded conversation ids and replies, activity validation, and faults on both
// endpoints.
TEST(TeamsSimTest, RoutesValidationAndFaults) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"teams":{"faults":{"storm_first":1,"storm_status":503},
      "token_faults":{"reset_first":1}}})");
  EXPECT_TRUE(sim->Handle(TokenRequest("app1")).reset_connection);
  EXPECT_EQ(StatsOf(*sim, "teams-token:app1")["faults"], 1);
  const std::string token = TokenFor(*sim, "app1");
  const std::string encoded = "19%3Aabc%40thread.tacv2";
  EXPECT_EQ(sim->Handle(Activity(encoded, token)).status, 503);
  EXPECT_EQ(sim->Handle(Activity(encoded, token)).status, 201);
  SimRequest reply = Activity(encoded, token);
  reply.path += "/1:abc";
  EXPECT_EQ(sim->Handle(reply).status, 201);
  EXPECT_EQ(sim->Handle(Activity(encoded, token, "not json")).status, 400);
  EXPECT_EQ(sim->Handle(Activity(encoded, token, R"({"text":"no type"})")).status, 400);
  nlohmann::json stats = StatsOf(*sim, "teams:19:abc@thread.tacv2");
  EXPECT_EQ(stats["faults"], 1);
  EXPECT_EQ(stats["accepted"], 2);
  EXPECT_EQ(stats["errors"], 3);  // the storm answer and the two bad bodies
  SimRequest nested = Activity("c1", token);
  nested.path += "/1/2";
  EXPECT_EQ(sim->Handle(nested).status, 404);
  EXPECT_EQ(sim->Handle(Post("/v3/conversations//activities", "{}")).status, 404);
}

// Verifies the teams section's defaults and its config errors.
TEST(TeamsSimTest, Config) {
  Result<SimConfig> config = ParseSimConfig("{}");
  ASSERT_TRUE(config.has_value());
  const TeamsConfig& teams = config->teams;
  EXPECT_EQ(teams.scope, "https://api.botframework.com/.default");
  EXPECT_EQ(teams.token_ttl_s, 3599);
  EXPECT_EQ(teams.conversation_windows,
            (std::vector<WindowLimit>{{7, 1}, {8, 2}, {60, 30}, {1800, 3600}}));
  EXPECT_EQ(teams.app_windows, (std::vector<WindowLimit>{{50, 1}}));
  EXPECT_EQ(teams.fail_412_every, 0);
  Result<SimConfig> windows =
      ParseSimConfig(R"({"teams":{"app_windows":[{"limit":5,"window_s":0.5}]}})");
  ASSERT_TRUE(windows.has_value()) << windows.status().ToString();
  EXPECT_EQ(windows->teams.app_windows, (std::vector<WindowLimit>{{5, 0.5}}));
  auto refused = [](const char* json, const std::string& names) {
    Result<SimConfig> r = ParseSimConfig(json);
    ASSERT_FALSE(r.has_value()) << json;
    EXPECT_NE(r.error().message().find(names), std::string::npos) << r.error().message();
  };
  refused(R"({"teams":{"scopes":"x"}})", "teams.scopes");
  refused(R"({"teams":{"clients":{"a":1}}})", "teams.clients");
  refused(R"({"teams":{"conversation_windows":{"limit":1}}})", "teams.conversation_windows");
  refused(R"({"teams":{"conversation_windows":[{"limit":1}]}})", "teams.conversation_windows[0]");
  refused(R"({"teams":{"app_windows":[{"limit":1,"window_s":1,"burst":2}]}})",
          "teams.app_windows[0].burst");
  refused(R"({"teams":{"app_windows":[{"limit":1,"window_s":0}]}})", "teams.app_windows[0]");
  refused(R"({"teams":{"token_ttl_s":-1}})", "teams.token_ttl_s");
  refused(R"({"teams":{"fail_412_every":-2}})", "teams.fail_412_every");
  refused(R"({"teams":{"token_faults":{"reset":1}}})", "teams.token_faults.reset");
}

}  // namespace
}  // namespace egress::sim
