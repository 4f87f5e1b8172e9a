// Issue 15's platform scenarios in simulated time (tests/support/pacing_scenario.h): the
// Scheduler against the simulator's platform logic on one FakeClock. Bounds on counts of 429s and
// Retry-After violations, and on simulated time (deterministic, so not at the mercy of the
// machine's load), each a little looser than the issue's.
#include <algorithm>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/support/pacing_scenario.h"

namespace egress {
namespace {

using std::chrono::milliseconds;

// Verifies that 200 LINE pushes at a hidden 20/s (no headers) are delivered in <= 14 s with
// <= 20 429s, for several latency seeds.
TEST(PacingScenariosTest, LineFindsHiddenLimit) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    PacingScenarioResult r = RunPacingScenario(LineScenario(10, 200, 20, 0, milliseconds(0), seed));
    ASSERT_TRUE(r.finished) << "seed " << seed;
    EXPECT_LE(r.seconds, 14.0) << "seed " << seed;
    EXPECT_LE(r.throttled, 20) << "seed " << seed;
    ASSERT_FALSE(r.trajectory.empty());
    EXPECT_LE(r.trajectory.front().limit, 40) << "the first decrease comes from what was sent";
  }
}

// Verifies that when the hidden limit drops from 20/s to 5/s after 5 s, the adaptive limit is
// at most 5 within 5 s of the drop, and what follows costs few 429s (bounded probes).
TEST(PacingScenariosTest, LineConvergesAfterDrop) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    PacingScenarioResult r =
        RunPacingScenario(LineScenario(10, 200, 20, 5, milliseconds(5000), seed));
    ASSERT_TRUE(r.finished) << "seed " << seed;
    double converged = -1;
    for (const PacingScenarioResult::Point& point : r.trajectory) {
      if (point.seconds >= 5.0 && point.limit > 0 && point.limit <= 5) {
        converged = point.seconds;
        break;
      }
    }
    EXPECT_GE(converged, 5.0) << "seed " << seed;
    EXPECT_LE(converged, 10.0) << "seed " << seed;
    EXPECT_LE(r.throttled, 30) << "seed " << seed;
  }
}

// Verifies that Discord's stated bucket and the global window are used without a 429 or an
// early request: 500 messages over 50 channels within the issue's 9.5 s (the bound is 9.0 s).
TEST(PacingScenariosTest, DiscordSpendsStatedBucket) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    PacingScenarioResult r = RunPacingScenario(DiscordScenario(50, 10, seed));
    ASSERT_TRUE(r.finished) << "seed " << seed;
    EXPECT_EQ(r.throttled, 0) << "seed " << seed;
    EXPECT_EQ(r.early, 0) << "seed " << seed;
    EXPECT_LE(r.seconds, 9.5) << "seed " << seed;
  }
}

// Verifies issue 15's fairness case in simulated time: A's 3,000 slow webhooks hold the shared
// host's 16 connections; B's 50, queued 2 s later, are all delivered within the issue's 2 s of
// being queued in every seed (1.16-1.20 s: B wins the first connection A frees and keeps it, its
// own meter at 50/s less the margin is the floor; ~50 s behind A's queue before), and A keeps
// the host's other connections in use meanwhile (bench/README.md section 8).
TEST(PacingScenariosTest, SharedHostConnectionsGoRoundTenants) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PacingScenarioResult r = RunPacingScenario(FairnessScenario(3000, 50, seed));
    ASSERT_TRUE(r.finished) << "seed " << seed;
    EXPECT_LE(r.done_s.back() - 2.0, 2.0) << "seed " << seed;
    // Requests on connections: all but B's one between its requests (kept, ~1 %).
    EXPECT_GE(r.late_busy_share, 0.97) << "seed " << seed;
    EXPECT_EQ(r.throttled, 0) << "seed " << seed;
  }
}

// Verifies that a Slack channel whose real burst (2) is below the profile's (3) draws at most
// one 429 and the run stays short.
TEST(PacingScenariosTest, SlackLearnsBurst) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PacingScenarioResult r = RunPacingScenario(SlackScenario(20, 5, seed));
    ASSERT_TRUE(r.finished) << "seed " << seed;
    EXPECT_LE(r.max_throttled_per_destination, 1) << "seed " << seed;
    EXPECT_EQ(r.early, 0) << "seed " << seed;
    EXPECT_LE(r.seconds, 4.5) << "seed " << seed;
  }
}

// Verifies issue 31's Slack bound in simulated time: 20 channels x 5 at 1/s, the profile guessing
// burst 3, the hidden burst 1, 2 or 3: within 1.1x the bound ((5 - burst) s) and at most two 429s
// in the workspace, for every latency seed of ten (5-30 ms per request). One channel probes each
// level above the confirmed one and its answer holds for all twenty; before, every channel drew
// its own 429 (20 for burst 2, 27-39 for burst 1 with 5.3-6.4 s).
TEST(PacingScenariosTest, SlackLearnsTheBurstOncePerWorkspace) {
  for (int burst = 1; burst <= 3; ++burst) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      PacingScenarioResult r = RunPacingScenario(SlackScenario(20, 5, seed, burst));
      ASSERT_TRUE(r.finished) << "burst " << burst << " seed " << seed;
      EXPECT_LE(r.seconds, 1.1 * (5 - burst)) << "burst " << burst << " seed " << seed;
      EXPECT_LE(r.throttled, 2) << "burst " << burst << " seed " << seed;
      EXPECT_EQ(r.early, 0) << "burst " << burst << " seed " << seed;
    }
  }
}

// Verifies issue 31's header-less search in simulated time over hidden limits drawn per seed
// (DrawHiddenLimit: a token bucket, a fixed window or a sliding log by seed, the rate
// log-uniform, 5-30 ms per request), ten windows' worth of pushes at least, against the bound
// with the requests' arrival jitter (HiddenLimitBound: a bucket of burst 1 at 37/s cannot take
// more than 25/s under 12.5 ms of jitter without refusing some): for every seed of 1-10, within
// 1.4x, in LINE's range (10-50/s, burst 1-5) with at most 15 429s, over 1-1,000/s with bursts up
// to 10 with at most 70 (a 1/s bucket over 200 s draws 68). Seeds 1-10 take 1.06-1.17x and 1.24x at
// most over the wide range (before the canary: up to 1.25x and 1.43x, a sliding log of 445/s);
// seeds 1-300 1.31x and 1.38x at most with up to 19 and 75 429s (before: 1.32x and 3.51x, a
// 476/s bucket whose limit fell to 85 after a window spent waiting). bench/README.md section 8.
TEST(PacingScenariosTest, HeaderlessSearchFindsDrawnLimits) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    for (const auto& [lo, hi, burst, most_ratio, most_429s] :
         {std::tuple{10.0, 50.0, 5, 1.4, 15}, std::tuple{1.0, 1000.0, 10, 1.4, 70}}) {
      const sim::HiddenLimitSpec limit = DrawHiddenLimit(seed, lo, hi, burst);
      const int pushes = std::max(200, static_cast<int>(limit.rate_per_s) * 10);
      const PacingScenario scenario = LineShapeScenario(10, pushes, limit, seed);
      PacingScenarioResult r = RunPacingScenario(scenario);
      const std::string what =
          fmt::format("seed {} {} {}/s burst {}", seed, sim::LimitShapeString(limit.shape),
                      limit.rate_per_s, limit.burst);
      ASSERT_TRUE(r.finished) << what;
      EXPECT_LE(r.seconds, most_ratio * HiddenLimitBound(limit, pushes, ArrivalJitter(scenario)))
          << what;
      EXPECT_LE(r.throttled, most_429s) << what;
    }
  }
}

// Verifies issue 31's LINE case in simulated time: 200 pushes at a hidden token bucket of
// 10-50/s, burst 1-5, within 1.4x the bound without jitter and with at most 15 429s, for every
// seed of ten (1.05-1.32x, 8-12 429s; before: 1.18-1.87x). The measurement of slow start's
// failed step finds the bucket's rate in a quarter of a window instead of a climb of several.
// Seeds 11-30 include buckets of burst 1 at 36-37/s that take 1.57-1.63x (1.10-1.13x the
// bound with this harness's 12.5 ms of jitter); the best fixed pace takes 1.34x
// (bench/bucket_jitter.py), so the search still loses time there.
TEST(PacingScenariosTest, LineFindsAHiddenBucketWithinTheIssuesBound) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    sim::HiddenLimitSpec limit = DrawHiddenLimit(seed, 10, 50, 5);
    limit.shape = sim::LimitShape::kTokenBucket;
    PacingScenarioResult r = RunPacingScenario(LineShapeScenario(10, 200, limit, seed));
    const std::string what =
        fmt::format("seed {} {}/s burst {}", seed, limit.rate_per_s, limit.burst);
    ASSERT_TRUE(r.finished) << what;
    EXPECT_LE(r.seconds, 1.4 * HiddenLimitBound(limit, 200)) << what;
    EXPECT_LE(r.throttled, 15) << what;
  }
}

}  // namespace
}  // namespace egress
