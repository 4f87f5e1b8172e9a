#include "tests/simulator/sim_config.h"

#include <gtest/gtest.h>

namespace egress::sim {
namespace {

// Verifies "{}" gives the documented defaults.
TEST(SimConfigTest, EmptyObjectGivesDefaults) {
  Result<SimConfig> config = ParseSimConfig("{}");
  ASSERT_TRUE(config.has_value()) << config.status().ToString();
  EXPECT_DOUBLE_EQ(config->slack.channel_rate_per_s, 1.0);
  EXPECT_DOUBLE_EQ(config->slack.channel_burst, 3.0);
  EXPECT_EQ(config->discord.global_per_s, 50);
  EXPECT_EQ(config->line.rate_per_s, 2000);
  EXPECT_TRUE(config->hook_defaults.secrets.empty());
}

// Verifies typos and wrong types are errors naming the key, not silently ignored.
TEST(SimConfigTest, RejectsUnknownKeysAndWrongTypes) {
  Result<SimConfig> typo = ParseSimConfig(R"({"slack":{"chanel_burst":3}})");
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.error().message().find("slack.chanel_burst"), std::string::npos);
  Result<SimConfig> type = ParseSimConfig(R"({"line":{"rate_per_s":"fast"}})");
  ASSERT_FALSE(type.has_value());
  EXPECT_NE(type.error().message().find("line.rate_per_s"), std::string::npos);
  EXPECT_FALSE(ParseSimConfig(R"({"slack":{"faults":{"storm":1}}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"slack":{"rate_limit_mode":"sometimes"}})").has_value());
  EXPECT_FALSE(ParseSimConfig("not json").has_value());
}

// Verifies a receiver starts from hook_defaults and overrides only what it names.
TEST(SimConfigTest, HooksInheritDefaults) {
  Result<SimConfig> config = ParseSimConfig(R"({
    "hook_defaults": {"rate_per_s": 5, "faults": {"delay_ms": 10}},
    "hooks": {"a": {"burst": 7, "faults": {"status": 410}}}})");
  ASSERT_TRUE(config.has_value()) << config.status().ToString();
  const HookConfig& a = config->HookFor("a");
  EXPECT_DOUBLE_EQ(a.rate_per_s, 5);
  EXPECT_DOUBLE_EQ(a.burst, 7);
  EXPECT_EQ(a.faults.delay_ms, 10);
  EXPECT_EQ(a.faults.status, 410);
  EXPECT_DOUBLE_EQ(config->HookFor("unnamed").rate_per_s, 5);
}

// Verifies runtime changes merge into the current document (RFC 7396).
TEST(SimConfigTest, MergePatchKeepsOtherKeys) {
  Result<std::string> merged =
      MergeSimConfigJson(R"({"slack":{"channel_burst":5,"retry_after_s":30}})",
                         R"({"slack":{"retry_after_s":null,"rate_limit_mode":"ok_false"}})");
  ASSERT_TRUE(merged.has_value());
  Result<SimConfig> config = ParseSimConfig(*merged);
  ASSERT_TRUE(config.has_value()) << config.status().ToString();
  EXPECT_DOUBLE_EQ(config->slack.channel_burst, 5);
  EXPECT_EQ(config->slack.retry_after_s, 0);
  EXPECT_EQ(config->slack.rate_limit_mode, "ok_false");
  EXPECT_FALSE(MergeSimConfigJson("{}", "[1]").has_value());
}

}  // namespace
}  // namespace egress::sim
