#include <map>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "adapters/redis_shared_settings.h"
#include "tests/support/redis_test.h"

namespace egress::adapters {
namespace {

// Two nodes' shared settings on one fresh redis-server (RedisTest drives the loop).
class RedisSharedSettingsTest : public RedisTwoNodesTest {
 protected:
  std::unique_ptr<RedisSharedSettings> Settings(int node) {
    auto settings = std::make_unique<RedisSharedSettings>(
        io_, *connections_[node], "test:", Millis(20),
        [this, node](const std::string& name, const std::string& text) {
          seen_[node][name] = text;
        });
    settings->Start();
    return settings;
  }

  // Puts and runs the loop until the first try answered; its status.
  Status Put(RedisSharedSettings& settings, const std::string& name, const std::string& text) {
    std::optional<Status> status;
    settings.Put(name, text, [&](Status st) { status = st; });
    EXPECT_TRUE(RunUntil([&] { return status.has_value(); }));
    return status.value_or(Status::TimedOut("no answer"));
  }

  std::map<std::string, std::string> seen_[2];
};

// Verifies that a setting one node puts reaches the other, a later one replaces it, and "" (an
// ended setting) is reported as such.
TEST_F(RedisSharedSettingsTest, ASettingReachesTheOtherNode) {
  auto a = Settings(0);
  auto b = Settings(1);
  ASSERT_TRUE(Put(*a, "pauses/p1", R"({"id":"p1"})").ok());
  ASSERT_TRUE(RunUntil([&] { return seen_[1].contains("pauses/p1"); }));
  EXPECT_EQ(seen_[1]["pauses/p1"], R"({"id":"p1"})");
  ASSERT_TRUE(Put(*a, "pauses/p1", "").ok());
  ASSERT_TRUE(RunUntil([&] { return seen_[1]["pauses/p1"].empty(); }));
  EXPECT_EQ(a->pending(), 0u);
}

// Verifies that a Put made while Redis is away reports the failure, waits, and lands once Redis
// is back: the other node then sees the last text put under that name (a resumed pause ends
// there too, instead of the old value coming back to a node that reads Redis afresh).
TEST_F(RedisSharedSettingsTest, APutMadeWhileRedisIsAwayLandsWhenItIsBack) {
  auto a = Settings(0);
  redis_.Stop();
  EXPECT_FALSE(Put(*a, "pauses/p2", R"({"id":"p2"})").ok());
  a->Put("pauses/p2", "", nullptr);  // ended before Redis came back: only this is written
  a->Put("overrides/acme", "{}", nullptr);
  EXPECT_EQ(a->pending(), 2u);
  ASSERT_TRUE(redis_.Start());
  ASSERT_TRUE(RunUntil([&] { return a->pending() == 0; }));
  auto b = Settings(1);  // reads everything Redis holds
  ASSERT_TRUE(RunUntil([&] { return seen_[1].contains("overrides/acme"); }));
  ASSERT_TRUE(RunUntil([&] { return seen_[1].contains("pauses/p2"); }));
  EXPECT_EQ(seen_[1]["pauses/p2"], "");
}

}  // namespace
}  // namespace egress::adapters
