#include "tests/simulator/destination_stats.h"

#include <chrono>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fake_clock.h"

namespace egress::sim {
namespace {

using std::chrono::seconds;

// Verifies requests before a handed-out time count as early, on the destination or its scope.
TEST(StatsBookTest, CountsEarlyRequestsAgainstDestinationAndScope) {
  FakeClock clock;
  StatsBook stats;
  stats.SetNotBefore("d", clock.Now() + seconds(2));
  stats.SetNotBefore("scope", clock.Now() + seconds(5));
  EXPECT_EQ(stats.OnRequest("d", clock.Now()).early, 1);
  clock.Advance(seconds(2));
  EXPECT_EQ(stats.OnRequest("d", clock.Now()).early, 1);
  EXPECT_EQ(stats.OnRequest("d", clock.Now(), "scope").early, 2);
  clock.Advance(seconds(3));
  EXPECT_EQ(stats.OnRequest("d", clock.Now(), "scope").early, 2);
  EXPECT_EQ(stats.Counters("d").requests, 4);
}

// Verifies a sequence going backwards per ordering key counts one violation each time.
TEST(StatsBookTest, CountsOrderViolationsPerKey) {
  StatsBook stats;
  EXPECT_TRUE(stats.CheckOrder("d", "k1", 1));
  EXPECT_TRUE(stats.CheckOrder("d", "k1", 2));
  EXPECT_TRUE(stats.CheckOrder("d", "k2", 1));
  EXPECT_FALSE(stats.CheckOrder("d", "k1", 1));
  EXPECT_TRUE(stats.CheckOrder("d", "k1", 3));
  EXPECT_EQ(stats.Counters("d").order_violations, 1);
}

// Verifies an identity is a repeat only within its time to live.
TEST(StatsBookTest, IdentitiesExpire) {
  FakeClock clock;
  StatsBook stats;
  EXPECT_FALSE(stats.SeenAccepted("d", "nonce", "n1", clock.Now(), seconds(10)));
  EXPECT_TRUE(stats.SeenAccepted("d", "nonce", "n1", clock.Now(), seconds(10)));
  EXPECT_FALSE(stats.SeenAccepted("d", "other", "n1", clock.Now(), seconds(10)));
  clock.Advance(seconds(10));
  EXPECT_FALSE(stats.SeenAccepted("d", "nonce", "n1", clock.Now(), seconds(10)));
}

// Verifies the JSON document lists destinations and sums them into totals.
TEST(StatsBookTest, JsonHasDestinationsAndTotals) {
  FakeClock clock;
  StatsBook stats;
  stats.OnRequest("a", clock.Now());
  stats.OnRequest("b", clock.Now()).accepted = 1;
  nlohmann::json doc = nlohmann::json::parse(stats.ToJson());
  EXPECT_EQ(doc["destinations"]["a"]["requests"], 1);
  EXPECT_EQ(doc["totals"]["requests"], 2);
  EXPECT_EQ(doc["totals"]["accepted"], 1);
  stats.Clear();
  EXPECT_TRUE(nlohmann::json::parse(stats.ToJson())["destinations"].empty());
}

// Verifies the stats keep the latest the server's loop ran, until cleared.
TEST(StatsBookTest, KeepsTheLatestTheLoopRan) {
  StatsBook stats;
  EXPECT_EQ(nlohmann::json::parse(stats.ToJson())["loop_late_max_ms"], 0);
  stats.NoteLoopLate(std::chrono::milliseconds(40));
  stats.NoteLoopLate(std::chrono::milliseconds(7));
  EXPECT_EQ(nlohmann::json::parse(stats.ToJson())["loop_late_max_ms"], 40);
  stats.Clear();
  EXPECT_EQ(nlohmann::json::parse(stats.ToJson())["loop_late_max_ms"], 0);
}

}  // namespace
}  // namespace egress::sim
