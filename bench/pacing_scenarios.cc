// Issue 15's pacing scenarios in simulated time: prints one line per run.
//
//   build/bench/pacing_scenarios [runs]      # default 10 runs (latency seeds 1..runs)
//   build/bench/pacing_scenarios 10 shapes [first seed]  # issue 31's drawn hidden limits
//   LATENCY_MS=100-250 build/bench/pacing_scenarios 10 shapes  # each request 100-250 ms (LINE's
//                                            # real round trips) instead of 5-30 ms
//   build/bench/pacing_scenarios 10 timeline # also B's deliveries in the fairness runs: when
//                                            # each was dispatched, got a connection, was done
//   build/bench/pacing_scenarios 10 timeline-nokeep   # the same with connection_keep = 0
//
// Each run drives the Scheduler against the simulator's platform logic on one fake clock
// (tests/support/pacing_scenario.h): deterministic for a seed, seconds are simulated seconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "tests/support/pacing_scenario.h"

namespace {

void Print(const char* name, uint64_t seed, const egress::PacingScenarioResult& r) {
  std::printf(
      "%-10s seed=%-3llu finished=%d seconds=%.2f delivered=%lld 429s=%lld "
      "max_429_per_dest=%lld early=%lld last_429_s=%.2f",
      name, static_cast<unsigned long long>(seed), r.finished ? 1 : 0, r.seconds,
      static_cast<long long>(r.delivered), static_cast<long long>(r.throttled),
      static_cast<long long>(r.max_throttled_per_destination), static_cast<long long>(r.early),
      r.last_throttle_s);
  if (!r.trajectory.empty()) {
    std::printf(" limits=");
    for (size_t i = 0; i < r.trajectory.size() && i < 12; ++i) {
      std::printf("%s%.1f:%lld%s", i == 0 ? "" : ",", r.trajectory[i].seconds,
                  static_cast<long long>(r.trajectory[i].limit),
                  r.trajectory[i].probing ? "p" : "");
    }
  }
  std::printf("\n");
}

// With TRAJECTORY set: the first destination's adaptive limit over time, a line per change.
void PrintTrajectory(const egress::PacingScenarioResult& r) {
  if (std::getenv("TRAJECTORY") == nullptr) {
    return;
  }
  for (const auto& point : r.trajectory) {
    std::printf("  %.3f %lld%s\n", point.seconds, static_cast<long long>(point.limit),
                point.probing ? " probing" : "");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  const std::string mode = argc > 2 ? argv[2] : "";
  const bool timeline = mode.rfind("timeline", 0) == 0;
  using std::chrono::milliseconds;
  // LATENCY_MS=lo-hi: the shapes' requests take lo to hi ms (the harness's default is 5-30).
  const char* latency = std::getenv("LATENCY_MS");
  int latency_lo = 5;
  int latency_hi = 30;
  if (latency != nullptr && std::sscanf(latency, "%d-%d", &latency_lo, &latency_hi) != 2) {
    std::fprintf(stderr, "LATENCY_MS must be lo-hi in ms, e.g. 100-250\n");
    return 2;
  }
  auto shape = [&](int pushes, const egress::sim::HiddenLimitSpec& limit, uint64_t seed) {
    egress::PacingScenario scenario = egress::LineShapeScenario(10, pushes, limit, seed);
    scenario.latency_min = milliseconds(std::max(0, latency_lo));
    scenario.latency_max = milliseconds(std::max(latency_lo, latency_hi));
    return scenario;
  };
  if (mode == "shapes") {
    // Issue 31: LINE's 200 pushes over hidden limits drawn per seed (the e2e range, then the
    // property test's), and Slack's hidden burst 1-3.
    const int first = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
    for (int i = first; i < first + runs; ++i) {
      const auto seed = static_cast<uint64_t>(i);
      for (const auto& [lo, hi, burst] : {std::tuple{10.0, 50.0, 5}, std::tuple{1.0, 1000.0, 10}}) {
        const egress::sim::HiddenLimitSpec limit = egress::DrawHiddenLimit(seed, lo, hi, burst);
        // Ten windows' worth at least, so that a fast limit is not done in its first burst.
        const int pushes = std::max(200, static_cast<int>(limit.rate_per_s) * 10);
        const egress::PacingScenario scenario = shape(pushes, limit, seed);
        const egress::PacingScenarioResult r = egress::RunPacingScenario(scenario);
        const double bound = egress::HiddenLimitBound(limit, pushes);
        const double jittered =
            egress::HiddenLimitBound(limit, pushes, egress::ArrivalJitter(scenario));
        std::printf(
            "line %-12s rate=%-4.0f burst=%-2d seed=%-3d seconds=%.2f bound=%.2f x%.2f 429s=%lld "
            "jittered=%.2f x%.2f\n",
            std::string(egress::sim::LimitShapeString(limit.shape)).c_str(), limit.rate_per_s,
            limit.burst, i, r.seconds, bound, bound > 0 ? r.seconds / bound : 0.0,
            static_cast<long long>(r.throttled), jittered, r.seconds / jittered);
        PrintTrajectory(r);
      }
      {
        // Issue 31's LINE case: 200 pushes at a hidden token bucket of 10-50/s, burst 1-5.
        egress::sim::HiddenLimitSpec limit = egress::DrawHiddenLimit(seed, 10, 50, 5);
        limit.shape = egress::sim::LimitShape::kTokenBucket;
        const egress::PacingScenario scenario = shape(200, limit, seed);
        const egress::PacingScenarioResult r = egress::RunPacingScenario(scenario);
        const double bound = egress::HiddenLimitBound(limit, 200);
        const double jittered =
            egress::HiddenLimitBound(limit, 200, egress::ArrivalJitter(scenario));
        std::printf(
            "line-200 token_bucket rate=%-4.0f burst=%-2d seed=%-3d seconds=%.2f bound=%.2f x%.2f "
            "429s=%lld jittered=%.2f x%.2f\n",
            limit.rate_per_s, limit.burst, i, r.seconds, bound, r.seconds / bound,
            static_cast<long long>(r.throttled), jittered, r.seconds / jittered);
        PrintTrajectory(r);
      }
      for (int burst = 1; burst <= 3; ++burst) {
        const egress::PacingScenarioResult r =
            egress::RunPacingScenario(egress::SlackScenario(20, 5, seed, burst));
        const double bound = 5.0 - burst;
        std::printf("slack burst=%d seed=%-3d seconds=%.2f bound=%.2f x%.2f 429s=%lld\n", burst, i,
                    r.seconds, bound, r.seconds / bound, static_cast<long long>(r.throttled));
      }
    }
    return 0;
  }
  for (int i = 1; i <= runs; ++i) {
    const auto seed = static_cast<uint64_t>(i);
    Print("line", seed,
          egress::RunPacingScenario(egress::LineScenario(10, 200, 20, 0, milliseconds(0), seed)));
    Print(
        "line-drop", seed,
        egress::RunPacingScenario(egress::LineScenario(10, 200, 20, 5, milliseconds(5000), seed)));
    Print("discord", seed, egress::RunPacingScenario(egress::DiscordScenario(50, 10, seed)));
    Print("slack", seed, egress::RunPacingScenario(egress::SlackScenario(20, 5, seed)));
    egress::PacingScenario fairness = egress::FairnessScenario(3000, 50, seed);
    if (mode == "timeline-nokeep") {
      fairness.connection_keep = milliseconds(0);  // freed connections are never kept
    }
    const egress::PacingScenarioResult fair = egress::RunPacingScenario(fairness);
    std::printf(
        "%-10s seed=%-3llu finished=%d seconds=%.2f delivered=%lld b_seconds_after_queued=%.2f "
        "connections_busy_while_b=%.3f\n",
        "fairness", static_cast<unsigned long long>(seed), fair.finished ? 1 : 0, fair.seconds,
        static_cast<long long>(fair.delivered), fair.done_s.back() - 2.0, fair.late_busy_share);
    if (timeline) {
      // Seconds after B was queued (2 s): dispatched / on a connection / delivered.
      for (size_t k = 0; k < fair.last_timeline.size(); ++k) {
        const auto& t = fair.last_timeline[k];
        std::printf("  b%-2zu %.3f %.3f %.3f\n", k + 1, t.dispatched_s - 2.0, t.sent_s - 2.0,
                    t.done_s - 2.0);
      }
    }
  }
  return 0;
}
