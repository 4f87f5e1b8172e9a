// Issue 15's pacing scenarios in simulated time: prints one line per run.
//
//   build/bench/pacing_scenarios [runs]      # default 10 runs (latency seeds 1..runs)
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

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  const std::string mode = argc > 2 ? argv[2] : "";
  const bool timeline = mode.rfind("timeline", 0) == 0;
  using std::chrono::milliseconds;
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
