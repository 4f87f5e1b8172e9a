#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/connection_budget.h"
#include "dispatcher/pacing/scheduler.h"
#include "dispatcher/pacing/scope_path.h"
#include "tests/simulator/hidden_limit.h"
#include "tests/simulator/sim_message.h"

namespace egress {

// One platform scenario of issue 15, run in simulated time: the Scheduler (with the shipped
// profiles' throttle waits and a 5 % pacing margin), the adapters' header parser and the
// simulator's platform logic (tests/simulator) on one FakeClock, with a seeded latency per
// request. Deterministic for a seed; no sockets, no sleeping. The figures are the pacing's,
// not the transport's: a real run adds connection and intake time.
struct PacingScenario {
  std::string name;
  std::string sim_config = "{}";
  // Deployment defaults to replace (e.g. a raised Slack workspace budget).
  std::vector<std::pair<pacing::BudgetName, pacing::Budget>> budgets;
  struct Destination {
    pacing::DestinationSpec spec;
    sim::SimRequest request;  // what each of its deliveries sends
    int deliveries = 0;
    // Added to each of its requests' latency (a slow receiver). Default: 0.
    Millis answer_delay{0};
    // Its deliveries are queued this long after the start. Default: at the start.
    Millis queued_at{0};
  };
  std::vector<Destination> destinations;
  // Request latency: uniform in [min, max] per request (the simulator answers half way).
  Millis latency_min{5};
  Millis latency_max{30};
  uint64_t seed = 1;
  // A merge patch POSTed to /_sim/config at `change_at` (e.g. a limit that drops); none if empty.
  std::string change_patch;
  Millis change_at{0};
  // The transport's connections, scheduled (SchedulerOptions::connections). Default: unlimited.
  pacing::ConnectionLimits connections;
  // SchedulerOptions::connection_keep. Default: the Scheduler's.
  Millis connection_keep = pacing::SchedulerOptions{}.connection_keep;
  // Gives up after this much simulated time.
  Millis deadline{120'000};
};

struct PacingScenarioResult {
  bool finished = false;  // every delivery delivered before the deadline
  double seconds = 0;     // simulated time until the last delivery
  int64_t delivered = 0;
  int64_t throttled = 0;  // 429s (and body throttles) received
  int64_t max_throttled_per_destination = 0;
  int64_t early = 0;  // the simulator's count of requests sent inside a time it had stated
  double last_throttle_s = -1;
  // Per destination: the time of its last delivery, -1 when it did not finish.
  std::vector<double> done_s;
  // From the latest queued_at to the last delivery of the destinations queued then: the share of
  // the connection limit (connections.per_origin) that was in use, 0 to 1; -1 when no
  // destination was queued late.
  double late_busy_share = -1;
  // The first destination's adaptive limit over time: (seconds, limit, probing); limit -1 when
  // the key is at full pace again.
  struct Point {
    double seconds;
    int64_t limit;
    bool probing;
  };
  std::vector<Point> trajectory;
  // The last destination's deliveries by sequence: when each was dispatched, sent (got a
  // connection) and delivered, in seconds; -1 for what did not happen.
  struct Timeline {
    double dispatched_s = -1;
    double sent_s = -1;
    double done_s = -1;
  };
  std::vector<Timeline> last_timeline;
  // When each delivery was delivered, in seconds, in order.
  std::vector<double> delivered_s;
};

PacingScenarioResult RunPacingScenario(const PacingScenario& scenario);

// The scenarios of issue 15 (see bench/README.md, "Pacing scenarios").
// LINE: `deliveries` pushes over `users` users of one channel token whose real limit is
// `hidden_per_s` (no headers); with `drop_to_per_s` > 0 the limit drops to it at `drop_at`.
PacingScenario LineScenario(int users, int deliveries, int hidden_per_s, int drop_to_per_s,
                            Millis drop_at, uint64_t seed);
// LINE as above, the channel's hidden limit `limit` (any shape; sim::HiddenLimitSpec).
PacingScenario LineShapeScenario(int users, int deliveries, const sim::HiddenLimitSpec& limit,
                                 uint64_t seed);
// The least time in seconds `deliveries` sends can take under `limit`, sent at the best moments:
// a token bucket's burst at once and the rest one per 1/rate; a window's limit in each window.
// With `jitter` (the spread of the requests' delays on the way to the platform) a bucket's pace
// is also held to the fastest one the bucket cannot refuse: any burst + 1 sends in a row arrive
// at least 1/rate apart from first to last, so burst / pace - jitter >= 1 / rate. A bucket of
// burst 1 at 37/s under 12.5 ms of jitter then takes 1.47x the bound without it.
double HiddenLimitBound(const sim::HiddenLimitSpec& limit, int deliveries,
                        Millis jitter = Millis(0));
// The spread of a request's delay on its way to the platform in `scenario` (half of
// latency_max - latency_min: the harness spends half a request's latency each way).
Millis ArrivalJitter(const PacingScenario& scenario);
// A hidden limit drawn from `seed`: the shape (fixed window, token bucket, sliding log by seed
// modulo 3), a rate
// log-uniform in [min_rate, max_rate] per second (whole), a bucket's burst in [1, max_burst], a
// window of 1 s.
sim::HiddenLimitSpec DrawHiddenLimit(uint64_t seed, double min_rate, double max_rate,
                                     int max_burst);
// Discord: `channels` channels x `per_channel` messages, route 5 per 5 s, global 50/s.
PacingScenario DiscordScenario(int channels, int per_channel, uint64_t seed);
// Slack: `channels` x `per_channel` messages, 1/s burst `hidden_burst` per channel (default 2),
// the profile's burst 3, the workspace cap raised.
PacingScenario SlackScenario(int channels, int per_channel, uint64_t seed, int hidden_burst = 2);
// Fairness on a shared host: tenant A's `slow` webhooks over 50 URLs answering in 300 ms, then
// at 2 s tenant B's `fast` to one URL of the same host; 16 connections to the host. The last
// destination is B's.
PacingScenario FairnessScenario(int slow, int fast, uint64_t seed);

}  // namespace egress
