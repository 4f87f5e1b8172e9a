#include "dispatcher/cli/format.h"

#include <gtest/gtest.h>

#include "storage/delivery.h"

namespace egress::cli {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

// Verifies relative times on both sides of now, at every unit boundary.
TEST(RelativeTimeTest, FutureAndPast) {
  EXPECT_EQ(RelativeTime(kNow, kNow), "now");
  EXPECT_EQ(RelativeTime(kNow + 999, kNow), "now");
  EXPECT_EQ(RelativeTime(kNow + 12'000, kNow), "in 12s");
  EXPECT_EQ(RelativeTime(kNow - 59'999, kNow), "59s ago");
  EXPECT_EQ(RelativeTime(kNow - 180'000, kNow), "3m ago");
  EXPECT_EQ(RelativeTime(kNow + 2 * 3'600'000, kNow), "in 2h");
  EXPECT_EQ(RelativeTime(kNow + 2 * 3'600'000 + 5 * 60'000, kNow), "in 2h5m");
  EXPECT_EQ(RelativeTime(kNow - 4 * 86'400'000LL, kNow), "4d ago");
  EXPECT_EQ(RelativeTime(kNow - 4 * 86'400'000LL - 3 * 3'600'000, kNow), "4d3h ago");
}

// Verifies that zero (unknown) prints as a dash.
TEST(RelativeTimeTest, UnknownIsDash) { EXPECT_EQ(RelativeTime(0, kNow), "-"); }

// Verifies that columns line up at the widest cell plus two spaces, without trailing spaces.
TEST(RenderTableTest, AlignsColumns) {
  EXPECT_EQ(
      RenderTable({{"ID", "STATE", "REASON"}, {"a1", "dead", "http_404"}, {"b", "queued", ""}}),
      "ID  STATE   REASON\n"
      "a1  dead    http_404\n"
      "b   queued\n");
  EXPECT_EQ(RenderTable({}), "");
}

// Verifies that long cells are cut with an ellipsis.
TEST(TruncateTest, CutsWithEllipsis) {
  EXPECT_EQ(Truncate("abcdef", 6), "abcdef");
  EXPECT_EQ(Truncate("abcdefg", 6), "abc...");
  EXPECT_EQ(Truncate("abcdefg", 2), "ab");
}

// Verifies that destination keys print with slashes and parse back, URLs included.
TEST(DestinationRefTest, RoundTrips) {
  const std::string key =
      storage::DestinationKeyOf("webhook", "acme", "hooks", "http://127.0.0.1:9/x");
  EXPECT_EQ(DestinationRef(key), "webhook/acme/hooks/http://127.0.0.1:9/x");
  EXPECT_EQ(ParseDestinationRef("webhook/acme/hooks/http://127.0.0.1:9/x"), key);
  EXPECT_EQ(ParseDestinationRef(key), key);
  EXPECT_EQ(ParseDestinationRef("slack/acme/bot"), "");
  EXPECT_EQ(ParseDestinationRef("slack/acme/bot/"), "");
}

// Verifies the replay progress bar: empty, part-way, full, past the count, and without a count.
TEST(ReplayProgressLineTest, FillsWithMatched) {
  EXPECT_EQ(ReplayProgressLine(0, 0, 2000, 10), "[----------]    0/2000 matched  0 replayed");
  EXPECT_EQ(ReplayProgressLine(1000, 990, 2000, 10),
            "[#####-----] 1000/2000 matched  990 replayed");
  EXPECT_EQ(ReplayProgressLine(2000, 2000, 2000, 10),
            "[##########] 2000/2000 matched  2000 replayed");
  EXPECT_EQ(ReplayProgressLine(2500, 2500, 2000, 10),
            "[##########] 2500/2000 matched  2500 replayed");
  EXPECT_EQ(ReplayProgressLine(7, 7, 0, 0), "[#] 7/0 matched  7 replayed");
}

}  // namespace
}  // namespace egress::cli
