#include "tests/simulator/acme_sim.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "tests/simulator/sim_test_requests.h"

namespace egress::sim {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr const char* kKey = "acme-key-secret";
// FakeClock's wall start, 2026-01-01T00:00:00Z, in epoch ms: a multiple of every window below.
constexpr int64_t kWallStartMs = 1'767'225'600'000;

// A message to `room` with key `key` (none when empty) and JSON `body`.
SimRequest PostMessage(const std::string& room, const std::string& key = kKey,
                       const std::string& body = R"({"body":"hi"})") {
  if (key.empty()) {
    return Post("/acme/v2/rooms/" + room + "/messages", body);
  }
  return Post("/acme/v2/rooms/" + room + "/messages", body,
              {{"content-type", "application/json"}, {"x-acme-key", key}});
}

// Checks the window headers of an answer.
void ExpectQuota(const SimResponse& r, int limit, int left, int64_t reset_ms) {
  EXPECT_EQ(HeaderOf(r, "X-Acme-Quota-Limit"), std::to_string(limit));
  EXPECT_EQ(HeaderOf(r, "X-Acme-Quota-Left"), std::to_string(left));
  EXPECT_EQ(HeaderOf(r, "X-Acme-Quota-Reset"), std::to_string(reset_ms));
}

// Checks a quota answer: the status, the body with retry_in_ms, no Retry-After.
void ExpectQuotaExceeded(const SimResponse& r, int64_t retry_in_ms, int status = 400) {
  EXPECT_EQ(r.status, status);
  EXPECT_EQ(r.body, R"({"error":{"code":"quota_exceeded","retry_in_ms":)" +
                        std::to_string(retry_in_ms) + "}}");
  EXPECT_EQ(HeaderOf(r, "Retry-After"), "");
}

// Verifies the success shape, the headers on every success with Left counting down to 0, the
// reset at the window's end in epoch ms, and stats keyed by room without the key.
TEST(AcmeSimTest, SuccessHeadersAndLeftCountingDown) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  SimResponse first = sim->Handle(PostMessage("lobby"));
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.body, R"({"data":{"id":"m1"},"ok":1})");
  ExpectQuota(first, 5, 4, kWallStartMs + 2000);
  for (int left = 3; left >= 0; --left) {
    clock.Advance(milliseconds(100));
    SimResponse r = sim->Handle(PostMessage("lobby"));
    ASSERT_EQ(r.status, 200) << left;
    ExpectQuota(r, 5, left, kWallStartMs + 2000);
  }
  EXPECT_EQ(BodyOf(sim->Handle(PostMessage("hall")))["data"]["id"], "m6");
  nlohmann::json stats = StatsOf(*sim, "acme:lobby");
  EXPECT_EQ(stats["requests"], 5);
  EXPECT_EQ(stats["accepted"], 5);
  EXPECT_EQ(stats["payloads"], 5);
  EXPECT_EQ(stats["rate_limited"], 0);
  EXPECT_EQ(sim->StatsJson().find(kKey), std::string::npos);
}

// Verifies the quota answer (400, retry_in_ms until the window ends, headers with Left 0), that
// a request of the same (key, room) before the window ends is refused again and counts early,
// that other keys and rooms have their own windows, and that the next window starts afresh.
TEST(AcmeSimTest, QuotaExceededUntilTheWindowEnds) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  clock.Advance(milliseconds(500));
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(sim->Handle(PostMessage("lobby")).status, 200) << i;
  }
  SimResponse refused = sim->Handle(PostMessage("lobby"));
  ExpectQuotaExceeded(refused, 1500);
  ExpectQuota(refused, 5, 0, kWallStartMs + 2000);
  EXPECT_EQ(StatsOf(*sim, "acme:lobby")["early"], 0);
  // Another key in the same room, and the same key in another room, are not limited.
  EXPECT_EQ(sim->Handle(PostMessage("lobby", "other-key")).status, 200);
  EXPECT_EQ(sim->Handle(PostMessage("hall")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "acme:lobby")["early"], 0);
  // retry_in_ms is rounded up to whole milliseconds.
  clock.Advance(microseconds(700'400));
  SimResponse again = sim->Handle(PostMessage("lobby"));
  ExpectQuotaExceeded(again, 800);
  ExpectQuota(again, 5, 0, kWallStartMs + 2000);
  EXPECT_EQ(StatsOf(*sim, "acme:lobby")["early"], 1);
  // The window ends at 2000 ms: a new window, not early.
  clock.Advance(microseconds(799'600));
  SimResponse next = sim->Handle(PostMessage("lobby"));
  ASSERT_EQ(next.status, 200);
  ExpectQuota(next, 5, 4, kWallStartMs + 4000);
  nlohmann::json stats = StatsOf(*sim, "acme:lobby");
  EXPECT_EQ(stats["requests"], 9);
  EXPECT_EQ(stats["accepted"], 7);
  EXPECT_EQ(stats["rate_limited"], 2);
  EXPECT_EQ(stats["early"], 1);
  EXPECT_EQ(stats["errors"], 0);
}

// Verifies windows begin at multiples of room_window_ms on the wall clock, not at the first
// request: a request 1 ms before a boundary and one at it are in different windows.
TEST(AcmeSimTest, WindowsStartAtMultiplesOfTheWindow) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"acme":{"room_limit":2,"room_window_ms":10000}})");
  clock.SetWallMillis(kWallStartMs + 19'999);
  SimResponse first = sim->Handle(PostMessage("lobby"));
  ExpectQuota(first, 2, 1, kWallStartMs + 20'000);
  ExpectQuota(sim->Handle(PostMessage("lobby")), 2, 0, kWallStartMs + 20'000);
  ExpectQuotaExceeded(sim->Handle(PostMessage("lobby")), 1);
  clock.Advance(milliseconds(1));
  SimResponse next = sim->Handle(PostMessage("lobby"));
  ASSERT_EQ(next.status, 200);
  ExpectQuota(next, 2, 1, kWallStartMs + 30'000);
}

// Verifies status_429 changes only the quota answer's status.
TEST(AcmeSimTest, Status429) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"acme":{"room_limit":1,"status_429":true}})");
  EXPECT_EQ(sim->Handle(PostMessage("lobby")).status, 200);
  SimResponse refused = sim->Handle(PostMessage("lobby"));
  ExpectQuotaExceeded(refused, 2000, 429);
  ExpectQuota(refused, 1, 0, kWallStartMs + 2000);
  EXPECT_EQ(StatsOf(*sim, "acme:lobby")["rate_limited"], 1);
}

// Verifies keys: a missing key is refused, with a list only its keys are accepted, and an empty
// list accepts any key.
TEST(AcmeSimTest, BadKey) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"acme":{"keys":["k1","k2"]}})");
  for (const std::string key : {"", "k3"}) {
    SimResponse r = sim->Handle(PostMessage("lobby", key));
    EXPECT_EQ(r.status, 401) << key;
    EXPECT_EQ(r.body, R"({"error":{"code":"bad_key"}})");
    EXPECT_EQ(HeaderOf(r, "X-Acme-Quota-Left"), "");
  }
  EXPECT_EQ(sim->Handle(PostMessage("lobby", "k2")).status, 200);
  nlohmann::json stats = StatsOf(*sim, "acme:lobby");
  EXPECT_EQ(stats["requests"], 3);
  EXPECT_EQ(stats["errors"], 2);
  EXPECT_EQ(stats["accepted"], 1);
  auto any = MakeSimulator(clock, "{}");
  EXPECT_EQ(any->Handle(PostMessage("lobby", "whatever")).status, 200);
  EXPECT_EQ(any->Handle(PostMessage("lobby", "")).status, 401);
}

// Verifies bodies that are not an object with a string "body" are refused 400 bad_request and
// do not use the window.
TEST(AcmeSimTest, BadBody) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"acme":{"room_limit":1}})");
  for (const std::string body : {"", "body=hi", "[]", R"("hi")", "{}", R"({"body":7})",
                                 R"({"body":null})", R"({"text":"hi"})"}) {
    SimResponse r = sim->Handle(PostMessage("lobby", kKey, body));
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.body, R"({"error":{"code":"bad_request"}})") << body;
  }
  EXPECT_EQ(sim->Handle(PostMessage("lobby", kKey, R"({"body":""})")).status, 200);
  nlohmann::json stats = StatsOf(*sim, "acme:lobby");
  EXPECT_EQ(stats["errors"], 8);
  EXPECT_EQ(stats["accepted"], 1);
  EXPECT_EQ(stats["rate_limited"], 0);
}

// Verifies payload seq is checked per room like on the other platforms, and msg_id repeats.
TEST(AcmeSimTest, OrderAndDuplicates) {
  FakeClock clock;
  auto sim = MakeSimulator(clock, R"({"acme":{"room_limit":0}})");
  for (const char* body :
       {R"({"body":"a","seq":1,"msg_id":"x1"})", R"({"body":"b","seq":3,"msg_id":"x3"})",
        R"({"body":"c","seq":2,"msg_id":"x2"})", R"({"body":"d","seq":4,"msg_id":"x3"})"}) {
    SimResponse r = sim->Handle(PostMessage("lobby", kKey, body));
    EXPECT_EQ(r.status, 200) << body;
    EXPECT_EQ(HeaderOf(r, "X-Acme-Quota-Limit"), "");  // room_limit 0: unlimited, no headers
  }
  EXPECT_EQ(sim->Handle(PostMessage("hall", kKey, R"({"body":"e","seq":1})")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "acme:lobby")["order_violations"], 1);
  EXPECT_EQ(StatsOf(*sim, "acme:lobby")["duplicates"], 1);
  EXPECT_EQ(StatsOf(*sim, "acme:hall")["order_violations"], 0);
}

// Verifies faults apply per room, a reconfigure restarts the windows and a reset clears the
// stats, and paths outside the route are not found.
TEST(AcmeSimTest, FaultsReconfigureResetAndRoutes) {
  FakeClock clock;
  auto sim = MakeSimulator(
      clock, R"({"acme":{"room_limit":1,"faults":{"storm_first":1,"storm_status":502}}})");
  EXPECT_EQ(sim->Handle(PostMessage("lobby")).status, 502);
  EXPECT_EQ(sim->Handle(PostMessage("lobby")).status, 200);
  ExpectQuotaExceeded(sim->Handle(PostMessage("lobby")), 2000);
  EXPECT_EQ(StatsOf(*sim, "acme:lobby")["faults"], 1);
  EXPECT_EQ(sim->Handle(Post("/_sim/config", R"({"acme":{"room_limit":2,"faults":null}})")).status,
            200);
  SimResponse after = sim->Handle(PostMessage("lobby"));
  EXPECT_EQ(after.status, 200);
  ExpectQuota(after, 2, 1, kWallStartMs + 2000);
  EXPECT_EQ(sim->Handle(Post("/_sim/reset", "")).status, 200);
  EXPECT_EQ(sim->Handle(PostMessage("lobby")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "acme:lobby")["requests"], 1);
  EXPECT_EQ(sim->Handle(PostMessage("a%20b")).status, 200);
  EXPECT_EQ(StatsOf(*sim, "acme:a b")["accepted"], 1);
  EXPECT_EQ(sim->Handle(PostMessage("")).status, 404);
  EXPECT_EQ(sim->Handle(Post("/acme/v2/rooms/lobby/messages/1", "{}")).status, 404);
  EXPECT_EQ(sim->Handle(Post("/acme/v2/rooms/lobby", "{}")).status, 404);
}

// Verifies the acme section's defaults and its config errors.
TEST(AcmeSimTest, Config) {
  Result<SimConfig> config = ParseSimConfig("{}");
  ASSERT_TRUE(config.has_value());
  EXPECT_EQ(config->acme.room_limit, 5);
  EXPECT_EQ(config->acme.room_window_ms, 2000);
  EXPECT_TRUE(config->acme.keys.empty());
  EXPECT_FALSE(config->acme.status_429);
  Result<SimConfig> typo = ParseSimConfig(R"({"acme":{"room_limt":2}})");
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.error().message().find("acme.room_limt"), std::string::npos);
  Result<SimConfig> type = ParseSimConfig(R"({"acme":{"keys":[1]}})");
  ASSERT_FALSE(type.has_value());
  EXPECT_NE(type.error().message().find("acme.keys"), std::string::npos);
  EXPECT_FALSE(ParseSimConfig(R"({"acme":{"status_429":1}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"acme":{"room_window_ms":0}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"acme":{"room_window_ms":2592000001}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"acme":{"room_limit":-1}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"acme":{"faults":{"stat":1}}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"acme":[]})").has_value());
  EXPECT_TRUE(ParseSimConfig(R"({"acme":{"room_window_ms":2592000000}})").has_value());
  FakeClock clock;
  auto sim = MakeSimulator(clock, "{}");
  SimResponse refused = sim->Handle(Post("/_sim/config", R"({"acme":{"room_limit":"x"}})"));
  EXPECT_EQ(refused.status, 400);
}

}  // namespace
}  // namespace egress::sim
