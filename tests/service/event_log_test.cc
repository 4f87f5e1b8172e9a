// The event log: text lines and one JSON object per line, levels, escaping.

#include "dispatcher/service/event_log.h"

#include <gtest/gtest.h>

namespace egress::service {
namespace {

class EventLogTest : public ::testing::Test {
 protected:
  void TearDown() override { ConfigureEventLog(LogFormat::kText, LogLevel::kInfo); }
};

TEST_F(EventLogTest, JsonLinesCarryTimeLevelEventAndFields) {
  ConfigureEventLog(LogFormat::kJson, LogLevel::kInfo);
  testing::internal::CaptureStderr();
  LogEvent(LogLevel::kWarn, "destination_disabled",
           {{"destination",
             "webhook\x1f"
             "acme\x1fhooks\x1fhttp://127.0.0.1/x"},
            {"reason", "http_410: \"gone\"\n"},
            {"attempts", 3}});
  LogEvent(LogLevel::kDebug, "not_shown");
  const std::string out = testing::internal::GetCapturedStderr();
  ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  auto line = nlohmann::json::parse(out);
  EXPECT_EQ(line["level"], "warning");
  EXPECT_EQ(line["event"], "destination_disabled");
  // Through the redaction layer: the newline shows as \x0a, the key's separators as '/'.
  EXPECT_EQ(line["reason"], "http_410: \"gone\"\\x0a");
  EXPECT_EQ(line["attempts"], 3);
  EXPECT_EQ(line["ts"].get<std::string>().size(), 24u);  // 2026-12-01T10:00:00.123Z
  EXPECT_EQ(line["ts"].get<std::string>().back(), 'Z');
}

TEST_F(EventLogTest, TextLinesQuoteOnlyWhatNeedsIt) {
  ConfigureEventLog(LogFormat::kText, LogLevel::kDebug);
  testing::internal::CaptureStderr();
  LogEvent(LogLevel::kDebug, "draining", {{"signal", 15}, {"note", "two words"}, {"who", "ops"}});
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find(" debug draining "), std::string::npos) << out;
  EXPECT_NE(out.find("signal=15"), std::string::npos) << out;
  EXPECT_NE(out.find(R"(note="two words")"), std::string::npos) << out;
  EXPECT_NE(out.find("who=ops"), std::string::npos) << out;
}

TEST_F(EventLogTest, InvalidUtf8FromAPlatformDoesNotThrow) {
  ConfigureEventLog(LogFormat::kJson, LogLevel::kInfo);
  testing::internal::CaptureStderr();
  LogEvent(LogLevel::kInfo, "odd", {{"header", std::string("\xff\xfe", 2)}});
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NO_THROW((void)nlohmann::json::parse(out)) << out;
}

TEST(LogOptionsTest, ParsesKnownNamesOnly) {
  LogFormat f;
  LogLevel l;
  EXPECT_TRUE(ParseLogFormat("json", f));
  EXPECT_EQ(f, LogFormat::kJson);
  EXPECT_FALSE(ParseLogFormat("JSON", f));
  EXPECT_TRUE(ParseLogLevel("warn", l));
  EXPECT_EQ(l, LogLevel::kWarn);
  EXPECT_FALSE(ParseLogLevel("verbose", l));
}

}  // namespace
}  // namespace egress::service
