#include "dispatcher/cli/top_frame.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace egress::cli {
namespace {

using nlohmann::json;

constexpr int64_t kWallNow = 1'796'119'200'000;

json Dest(const std::string& name, json extra) {
  json d = {{"platform", "webhook"},
            {"tenant", "acme"},
            {"credential", "hooks"},
            {"destination", name},
            {"key",
             "webhook\x1f"
             "acme\x1fhooks\x1f" +
                 name},
            {"in_flight", 0},
            {"disabled", false}};
  d.update(extra);
  return d;
}

TopSample Sample(int64_t at_ms, int delivered, int accepted, int r429) {
  TopSample s;
  s.at_ms = at_ms;
  s.stats = {{"queued", 7},    {"in_flight", 2}, {"deferred", 3},        {"delivered", delivered},
             {"dead", 1},      {"cancelled", 0}, {"accepted", accepted}, {"platform_429s", r429},
             {"throttles", 4}, {"deferrals", 5}};
  s.metrics.delivered = delivered;
  s.destinations = json::array();
  return s;
}

std::string Text(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) {
    out += l + "\n";
  }
  return out;
}

void ExpectFits(const std::vector<std::string>& lines, int width, int height) {
  EXPECT_LE(lines.size(), static_cast<size_t>(height)) << Text(lines);
  for (const std::string& l : lines) {
    EXPECT_LE(l.size(), static_cast<size_t>(width)) << l;
  }
}

// Verifies that metrics text yields the delivered counter and deferrals summed by reason, with
// control bytes in a reason shown as '?'.
TEST(TopFrameTest, ReadsMetrics) {
  TopSample s;
  ReadMetrics(
      "# HELP relay_egress_deliveries_total x\n"
      "relay_egress_deliveries_total{platform=\"slack\",outcome=\"delivered\"} 10\n"
      "relay_egress_deliveries_total{platform=\"webhook\",outcome=\"delivered\"} 5\n"
      "relay_egress_deliveries_total{platform=\"webhook\",outcome=\"dead\"} 2\n"
      "relay_egress_deferrals_total{tenant=\"a\",platform=\"slack\",reason=\"budget:slack_"
      "channel\"} 3\n"
      "relay_egress_deferrals_total{tenant=\"b\",platform=\"slack\",reason=\"budget:slack_"
      "channel\"} 4\n"
      "relay_egress_deferrals_total{tenant=\"a\\\"x\",platform=\"line\",reason=\"backoff\"} 1\n"
      "relay_egress_deferrals_total{reason=\"broken\"} not-a-number\n"
      "relay_egress_deferrals_total{reason=\"two\\nlines\x1b[2J\"} 6\n"
      "relay_egress_platform_429_total{platform=\"slack\"} 9\n"
      "relay_egress_metrics_text_made_timestamp_seconds 1796119200.25\n",
      s);
  ASSERT_TRUE(s.metrics.delivered.has_value());
  EXPECT_EQ(*s.metrics.delivered, 15);
  EXPECT_EQ(s.metrics.deferrals_by_reason.size(), 3u);
  EXPECT_EQ(s.metrics.deferrals_by_reason["budget:slack_channel"], 7);
  EXPECT_EQ(s.metrics.deferrals_by_reason["backoff"], 1);
  // An escaped newline and an ESC from the service: shown as '?', not as a row break or control.
  EXPECT_EQ(s.metrics.deferrals_by_reason["two?lines?[2J"], 6);
  ASSERT_TRUE(s.metrics.made_s.has_value());
  EXPECT_EQ(*s.metrics.made_s, 1796119200.25);
}

// Verifies the counters read from GET /v1/stats (a service that has them): delivered and the
// deferrals by reason; without them, or with them malformed, nothing is set.
TEST(TopFrameTest, ReadsStatsCounters) {
  TopSample s;
  ASSERT_TRUE(ReadStatsCounters({{"attempts_by_outcome", {{"delivered", 12}, {"dead", 1}}},
                                 {"deferrals_by_reason",
                                  {{"backoff", 3},
                                   {"retry_after", 4},
                                   {"bad", "x"},
                                   {"huge", 1e300},
                                   {"negative", -1},
                                   {"esc\x1b[2J", 2}}}},
                                s));
  EXPECT_EQ(s.metrics.delivered, 12);
  EXPECT_EQ(s.metrics.deferrals_by_reason,
            (std::map<std::string, double>{{"backoff", 3}, {"esc?[2J", 2}, {"retry_after", 4}}));
  EXPECT_FALSE(s.metrics.made_s.has_value());
  TopSample none;
  EXPECT_FALSE(ReadStatsCounters({{"deferrals", 3}}, none));
  EXPECT_FALSE(ReadStatsCounters(
      {{"attempts_by_outcome", 5}, {"deferrals_by_reason", json::object()}}, none));
  EXPECT_FALSE(ReadStatsCounters(json::array(), none));
  EXPECT_FALSE(none.metrics.delivered.has_value());
}

// Verifies rates from two samples, the counts by state and the section headings.
TEST(TopFrameTest, ShowsRatesCountsAndHeadings) {
  TopSample before = Sample(10'000, 100, 200, 3);
  TopSample now = Sample(12'000, 120, 260, 5);
  before.metrics.deferrals_by_reason = {{"budget:webhook_destination", 10}};
  now.metrics.deferrals_by_reason = {{"budget:webhook_destination", 14}, {"backoff", 1}};
  const auto lines =
      RenderTopFrame(now, &before, {.source = "http://127.0.0.1:8686", .wall_now_ms = kWallNow});
  const std::string text = Text(lines);
  EXPECT_NE(text.find("delivered 10.0/s  accepted 30.0/s  429s 5 (1.0/s)  throttles 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("queued 7  in-flight 2  deferred 3  delivered 120  dead 1  cancelled 0"),
            std::string::npos)
      << text;
  for (const char* heading : {"DEFERRALS BY REASON", "BUSIEST DESTINATIONS", "MOST DEFERRED"}) {
    EXPECT_NE(text.find(heading), std::string::npos) << heading;
  }
  EXPECT_NE(text.find("budget:webhook_destination"), std::string::npos);
  EXPECT_NE(text.find("2.0"), std::string::npos) << text;  // 4 more deferrals in 2 s
  ExpectFits(lines, 80, 24);
  // Without an earlier sample, rates are unknown.
  const std::string first = Text(RenderTopFrame(now, nullptr, {.wall_now_ms = kWallNow}));
  EXPECT_NE(first.find("delivered -/s  accepted -/s"), std::string::npos) << first;
}

// Verifies the counters' rates when /metrics answers one text to several samples: samples a
// second apart that got the same text show no rate rather than 0, and the next text's rates are
// over the time between the two texts, not between the last two samples.
TEST(TopFrameTest, CounterRatesAreBetweenTextsNotSamples) {
  auto sample = [](int64_t at_ms, double made_s, int delivered, int deferred) {
    TopSample s = Sample(at_ms, delivered, 0, 0);
    s.metrics.made_s = made_s;
    s.metrics.deferrals_by_reason = {{"retry_after", deferred}};
    return s;
  };
  // Texts made at 100 s and 104 s; samples a second apart from 100.5 s.
  TopSample a = sample(100'500, 100, 100, 10);
  TopSample b = sample(101'500, 100, 100, 10);
  FollowMetrics(a, b);
  std::string text = Text(RenderTopFrame(b, &a, {.wall_now_ms = kWallNow}));
  EXPECT_NE(text.find("delivered -/s"), std::string::npos) << text;
  TopSample c = sample(102'500, 100, 100, 10);
  FollowMetrics(b, c);
  TopSample d = sample(104'500, 104, 140, 30);  // 40 delivered, 20 deferred in the 4 s between
  FollowMetrics(c, d);
  text = Text(RenderTopFrame(d, &c, {.wall_now_ms = kWallNow}));
  EXPECT_NE(text.find("delivered 10.0/s"), std::string::npos) << text;
  EXPECT_NE(text.find("  5.0\n"), std::string::npos) << text;  // retry_after a second
  TopSample e = sample(105'500, 104, 140, 30);  // the same text again: the same rates
  FollowMetrics(d, e);
  text = Text(RenderTopFrame(e, &d, {.wall_now_ms = kWallNow}));
  EXPECT_NE(text.find("delivered 10.0/s"), std::string::npos) << text;
  // A text made earlier than the last (the service's clock stepped back): no rate.
  TopSample back = sample(106'500, 103, 150, 30);
  FollowMetrics(e, back);
  text = Text(RenderTopFrame(back, &e, {.wall_now_ms = kWallNow}));
  EXPECT_NE(text.find("delivered -/s"), std::string::npos) << text;
  // A newer text whose counters went back (the service restarted): no rate, not 0.
  TopSample restarted = sample(107'500, 108, 5, 0);
  FollowMetrics(e, restarted);
  text = Text(RenderTopFrame(restarted, &e, {.wall_now_ms = kWallNow}));
  EXPECT_NE(text.find("delivered -/s"), std::string::npos) << text;
  // After a sample whose /metrics failed (nothing read), no rate: its zeros are not counts.
  TopSample failed = Sample(108'500, 0, 0, 0);
  failed.metrics = TopMetrics{};
  TopSample after_failed = Sample(109'500, 150, 0, 0);
  after_failed.metrics.deferrals_by_reason = {{"retry_after", 30}};
  FollowMetrics(failed, after_failed);
  text = Text(RenderTopFrame(after_failed, &failed, {.wall_now_ms = kWallNow}));
  EXPECT_NE(text.find("delivered -/s"), std::string::npos) << text;
  EXPECT_EQ(text.find("30.0"), std::string::npos) << text;
  // A text with no made time (an older service): between the samples, as before.
  TopSample f = Sample(106'500, 150, 0, 0);
  FollowMetrics(e, f);
  EXPECT_FALSE(f.metrics_before.has_value());
  text = Text(RenderTopFrame(f, &e, {.wall_now_ms = kWallNow}));
  EXPECT_NE(text.find("delivered 10.0/s"), std::string::npos) << text;
}

// Verifies that many destinations with long names still fit 80x24, busiest first, and that the
// newer per-destination fields are shown when present.
TEST(TopFrameTest, FitsEightyByTwentyFourWithLongNames) {
  TopSample now = Sample(1000, 0, 0, 0);
  for (int i = 0; i < 40; ++i) {
    now.destinations.push_back(
        Dest("http://127.0.0.1:9/" + std::string(100, 'x') + std::to_string(i),
             {{"queued", i}, {"in_flight", 1}}));
  }
  now.destinations.push_back(
      Dest("http://127.0.0.1:9/held", {{"queued", 100},
                                       {"deferred", 500},
                                       {"oldest_deferral_ms", kWallNow - 180'000},
                                       {"deferral", "budget:webhook_destination"},
                                       {"next_eligible_ms", kWallNow + 12'000},
                                       {"budget", {{"limit", 20}, {"remaining", 0}}}}));
  for (int i = 0; i < 30; ++i) {
    now.metrics.deferrals_by_reason["reason-" + std::to_string(i)] = i;
  }
  const auto lines = RenderTopFrame(now, nullptr, {.wall_now_ms = kWallNow});
  ExpectFits(lines, 80, 24);
  EXPECT_EQ(lines.size(), 24u);
  const std::string text = Text(lines);
  EXPECT_NE(text.find("xxx39  39"), std::string::npos) << text;      // busiest first, names cut
  EXPECT_NE(text.find("webhook/acme/"), std::string::npos) << text;  // in the middle
  EXPECT_NE(text.find("...xxx"), std::string::npos) << text;
  EXPECT_NE(text.find("held"), std::string::npos) << text;
  EXPECT_NE(text.find("500"), std::string::npos);
  EXPECT_NE(text.find("3m ago"), std::string::npos) << text;
  EXPECT_NE(text.find("in 12s"), std::string::npos) << text;
  EXPECT_NE(text.find("0/20"), std::string::npos) << text;
}

// Verifies the busiest destinations' DONE column: when each backlog would be done
// (drain_eta_ms), "-" when the service knows no pace (null) or sends none.
TEST(TopFrameTest, ShowsWhenEachBacklogWouldBeDone) {
  TopSample now = Sample(1000, 0, 0, 0);
  now.destinations.push_back(
      Dest("http://a.example/", {{"queued", 90}, {"drain_eta_ms", kWallNow + 125'000}}));
  now.destinations.push_back(
      Dest("http://b.example/", {{"queued", 50}, {"deferred", 0}, {"drain_eta_ms", nullptr}}));
  now.destinations.push_back(Dest("http://c.example/", {{"queued", 10}}));
  const std::string text =
      Text(RenderTopFrame(now, nullptr, {.wall_now_ms = kWallNow, .width = 120}));
  EXPECT_NE(text.find("DONE"), std::string::npos) << text;
  EXPECT_NE(text.find("  2m  "), std::string::npos) << text;
  const size_t b = text.find("b.example");
  ASSERT_NE(b, std::string::npos);
  EXPECT_NE(text.substr(b, text.find('\n', b) - b).find(" -  "), std::string::npos) << text;
}

// Verifies that the frame shrinks to tiny terminals and tolerates a bare destination list.
TEST(TopFrameTest, ShrinksAndToleratesMissingFields) {
  TopSample now;
  now.destinations = json::array({json{{"key", "k"}}, json{{"deferral", "backoff"}}});
  for (auto [w, h] : {std::pair{20, 5}, std::pair{1, 1}, std::pair{80, 0}, std::pair{40, 12}}) {
    ExpectFits(RenderTopFrame(now, nullptr, {.width = w, .height = h}), w, h);
  }
  const std::string text = Text(RenderTopFrame(now, nullptr, {}));
  EXPECT_NE(text.find("queued -  in-flight -"), std::string::npos) << text;
  EXPECT_NE(text.find("backoff"), std::string::npos) << text;
}

// Verifies that cutting a long line never splits a UTF-8 character.
TEST(TopFrameTest, CutsOnCharacterBoundaries) {
  TopSample now = Sample(0, 0, 0, 0);
  std::string name;
  for (int i = 0; i < 40; ++i) {
    name += "\xC3\xA9";  // é
  }
  now.destinations.push_back(Dest(name, {{"queued", 1}}));
  for (const std::string& line : RenderTopFrame(now, nullptr, {.width = 30, .height = 24})) {
    ASSERT_LE(line.size(), 30u);
    size_t i = line.size();
    while (i > 0 && (static_cast<unsigned char>(line[i - 1]) & 0xC0) == 0x80) {
      --i;
    }
    if (i > 0 && (static_cast<unsigned char>(line[i - 1]) & 0xE0) == 0xC0) {
      EXPECT_EQ(line.size() - i, 1u) << "split character at the end of: " << line;
    }
  }
}

}  // namespace
}  // namespace egress::cli
