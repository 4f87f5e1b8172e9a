#include "dispatcher/service/delivery/drain_estimate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/support/pacing_scenario.h"

namespace egress::service {
namespace {

constexpr int64_t kT0 = 1'767'225'600'000;

// Counts one delivery every `every_ms` from `from_ms` up to (not including) `to_ms`.
void Paced(DrainRate& rate, int64_t from_ms, int64_t to_ms, int64_t every_ms) {
  for (int64_t t = from_ms; t < to_ms; t += every_ms) {
    rate.Count(t);
  }
}

// Verifies that a steady pace reads as itself: from the second delivery on, and at every point
// of a slot once the slots are full.
TEST(DrainRateTest, ASteadyPaceReadsAsItself) {
  DrainRate rate;
  EXPECT_EQ(rate.PerSecond(kT0), std::nullopt);
  rate.Count(kT0);
  EXPECT_EQ(rate.PerSecond(kT0 + 50), std::nullopt);  // one delivery is no pace
  Paced(rate, kT0 + 50, kT0 + 2'000, 50);             // 20/s
  EXPECT_NEAR(*rate.PerSecond(kT0 + 2'000), 20.0, 0.01);
  Paced(rate, kT0 + 2'000, kT0 + 12'000, 50);
  for (int64_t at = kT0 + 12'000; at < kT0 + 23'000; at += 700) {
    EXPECT_NEAR(*rate.PerSecond(at), 20.0, 0.01) << at - kT0;
    Paced(rate, at, at + 700, 50);
  }
}

// Verifies that a change of pace shows within two seconds for a fast backlog, that a slow one
// reads as its pace at any phase, and that a backlog that stopped leaving reads slower and then
// as no pace once its last delivery is kSlots seconds old.
TEST(DrainRateTest, FollowsAChangeAndForgetsAStop) {
  DrainRate rate;
  Paced(rate, kT0, kT0 + 20'000, 25);           // 40/s
  Paced(rate, kT0 + 20'000, kT0 + 22'000, 50);  // then 20/s: shown 2 s later
  EXPECT_NEAR(*rate.PerSecond(kT0 + 22'000), 20.0, 1.5);
  Paced(rate, kT0 + 22'000, kT0 + 40'000, 500);  // then 2/s: averaged over the slots
  for (int64_t at = kT0 + 39'500; at < kT0 + 40'500; at += 100) {
    EXPECT_NEAR(*rate.PerSecond(at), 2.0, 0.01) << at - kT0;  // whatever the phase
  }
  // Stopped: slower the longer it stays stopped, none once every slot is empty.
  EXPECT_NEAR(*rate.PerSecond(kT0 + 42'000), 1.2, 0.3);
  EXPECT_EQ(rate.PerSecond(kT0 + 39'500 + (DrainRate::kSlots + 1) * DrainRate::kSlotMs),
            std::nullopt);
  // It starts again from the next delivery, without the old history.
  rate.Count(kT0 + 60'000);
  Paced(rate, kT0 + 60'100, kT0 + 61'000, 100);
  EXPECT_NEAR(*rate.PerSecond(kT0 + 61'000), 10.0, 1.2);
}

// Verifies the estimate: from max(now, not before) at the pace seen, held to the one foreseen;
// the foreseen one alone without history; now for no backlog; none when held, without a pace,
// or past a year.
TEST(DrainEtaTest, SeenPaceHeldToTheForeseenOne) {
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .seen_per_s = 20.0}, kT0), kT0 + 5'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .seen_per_s = 20.0, .foreseen_per_s = 10.0}, kT0),
            kT0 + 10'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .seen_per_s = 20.0, .foreseen_per_s = 50.0}, kT0),
            kT0 + 5'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .foreseen_per_s = 50.0}, kT0), kT0 + 2'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .seen_per_s = 20.0, .not_before_ms = kT0 + 30'000}, kT0),
            kT0 + 35'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .seen_per_s = 20.0, .not_before_ms = kT0 - 30'000}, kT0),
            kT0 + 5'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 0}, kT0), kT0);
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .seen_per_s = 20.0, .held = true}, kT0), std::nullopt);
  EXPECT_EQ(DrainEtaMs({.backlog = 100}, kT0), std::nullopt);
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .seen_per_s = 0.0}, kT0), std::nullopt);
  EXPECT_EQ(DrainEtaMs({.backlog = 100, .seen_per_s = std::nan("")}, kT0), std::nullopt);
  EXPECT_EQ(DrainEtaMs({.backlog = 100,
                        .seen_per_s = std::numeric_limits<double>::infinity(),
                        .foreseen_per_s = std::numeric_limits<double>::infinity()},
                       kT0),
            std::nullopt);
  EXPECT_EQ(DrainEtaMs({.backlog = INT64_MAX, .seen_per_s = 1e-9}, kT0), std::nullopt);
}

// Verifies the hold to the group's estimate: a destination cannot be done after the group
// (its tenant's backlog on its platform) that holds it, nor before it may go; with no pace of
// its own, or held by an operator, it still has no estimate.
TEST(DrainEtaTest, HeldToItsGroupsEstimate) {
  // 30 left at 1.5/s: 20 s; its channel's backlog is done in 15.
  EXPECT_EQ(DrainEtaMs({.backlog = 30, .seen_per_s = 1.5, .group_eta_ms = kT0 + 15'000}, kT0),
            kT0 + 15'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 30, .seen_per_s = 1.5, .group_eta_ms = kT0 + 25'000}, kT0),
            kT0 + 20'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 30,
                        .seen_per_s = 1.5,
                        .not_before_ms = kT0 + 18'000,
                        .group_eta_ms = kT0 + 15'000},
                       kT0),
            kT0 + 18'000);
  EXPECT_EQ(DrainEtaMs({.backlog = 30, .group_eta_ms = kT0 + 15'000}, kT0), std::nullopt);
  EXPECT_EQ(
      DrainEtaMs({.backlog = 30, .seen_per_s = 1.5, .held = true, .group_eta_ms = kT0 + 15'000},
                 kT0),
      std::nullopt);
}

// Verifies issue 33's LINE estimate in simulated time, where the pace is searched for (LINE
// states no limit: docs/pacing.md, "Adaptive pace"): 300 pushes over ten users of one channel
// whose hidden limit is a fixed window of 20/s, and as many as 15 s take under the limits drawn
// in LINE's range (a token bucket, a fixed window or a sliding log of 10-50/s, seeds 1-10).
// 6 s in, the backlog at the channel's pace read as DrainRate reads it is within 15% of the time
// it took: the search has found its pace by then (1-6% off; before the first window's count
// held the measurement, a fixed window read 26 and settled at 15-17 for seconds: up to +34%).
TEST(DrainEtaTest, LinesSearchedPaceIsSteadySixSecondsIn) {
  std::vector<std::pair<std::string, PacingScenario>> cases;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    cases.emplace_back("fixed window 20/s",
                       LineScenario(10, 300, 20, 0, std::chrono::milliseconds(0), seed));
    const sim::HiddenLimitSpec limit = DrawHiddenLimit(seed, 10, 50, 5);
    cases.emplace_back(
        fmt::format("{} {}/s burst {}", sim::LimitShapeString(limit.shape), limit.rate_per_s,
                    limit.burst),
        LineShapeScenario(10, std::max(300, static_cast<int>(limit.rate_per_s) * 15), limit, seed));
  }
  constexpr double kAtS = 6.0;
  for (const auto& [name, scenario] : cases) {
    const std::string what = fmt::format("{}, seed {}", name, scenario.seed);
    const PacingScenarioResult r = RunPacingScenario(scenario);
    ASSERT_TRUE(r.finished) << what;
    DrainRate rate;
    size_t done = 0;
    for (; done < r.delivered_s.size() && r.delivered_s[done] <= kAtS; ++done) {
      rate.Count(static_cast<int64_t>(std::llround(r.delivered_s[done] * 1000)));
    }
    const std::optional<double> per_s = rate.PerSecond(static_cast<int64_t>(kAtS * 1000));
    ASSERT_TRUE(per_s.has_value()) << what;
    const double said = static_cast<double>(r.delivered_s.size() - done) / *per_s;
    const double took = r.seconds - kAtS;
    EXPECT_LE(std::abs(said - took), 0.15 * took)
        << what << ": said " << said << " s, took " << took;
  }
}

}  // namespace
}  // namespace egress::service
