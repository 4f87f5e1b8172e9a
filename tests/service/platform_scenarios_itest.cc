// Issue 15's platform scenarios as a user runs them: one `relay-egress serve` process with the
// shipped profiles (config/profiles) against the platform simulator over loopback, each platform's
// real limit set in the simulator and not in our config. bench/pacing_scenarios runs the same
// scenarios in simulated time (no sockets, deterministic); these add the transport, intake and the
// machine. The bounds are the issue's, loosened for a loaded machine; the figures are printed.
//
// SCENARIO_RUNS=N runs each scenario N times (default 1; the issue asks Slack's ten). Not
// RELAY_EGRESS_*: the node would read that as a config override and refuse it.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dispatcher/base/clock.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/pacing_scenario.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";

int Runs() {
  const char* runs = std::getenv("SCENARIO_RUNS");
  const int n = runs == nullptr ? 1 : std::atoi(runs);
  return n < 1 ? 1 : n;
}

class PlatformScenariosTest : public ::testing::Test {
 protected:
  // A fresh simulator (its counters at zero, its config `sim_config`) and a fresh node with an
  // empty store; `extra` is more TOML for the node's config.
  void StartRun(const json& sim_config, const std::string& extra = "") {
    node_.reset();
    sim_ = std::make_unique<SimProcess>();
    ASSERT_TRUE(sim_->Start(SimWire::kHttp).ok());
    const json merged = sim_->Configure(sim_config);
    ASSERT_FALSE(merged.contains("error")) << merged.dump();
    ++run_;
    const std::string config = dir_.Sub(fmt::format("node{}.toml", run_));
    std::ofstream(config) << "[server]\nadmin_token = \"" << kAdminToken
                          << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \""
                          << dir_.Sub(fmt::format("store{}", run_)) << "\"\n"
                          << "[platforms.slack]\nbase_url = \"" << sim_->BaseUrl() << "\"\n"
                          << "[platforms.discord]\nbase_url = \"" << sim_->BaseUrl() << "\"\n"
                          << "[platforms.line]\nbase_url = \"" << sim_->BaseUrl() << "\"\n"
                          << extra << "[tenants.acme.credentials.bot]\nplatform = \"slack\"\n"
                          << "token = \"xoxb-acme\"\n"
                          << "[tenants.acme.credentials.dbot]\nplatform = \"discord\"\n"
                          << "token = \"bot-acme\"\n"
                          << "[tenants.acme.credentials.lchan]\nplatform = \"line\"\n"
                          << "token = \"line-acme\"\n";
    node_ = std::make_unique<ChildProcess>();
    port_ = node_->Start(
        BuildDir() + "/relay-egress",
        {"serve", "--config", config, "--profiles-dir", SourceDir() + "/config/profiles"});
    ASSERT_NE(port_, 0) << node_->error();
  }

  // Posts `deliveries` in one batch and returns when it was accepted.
  SteadyTime Post(const json& deliveries) {
    TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/batch",
                                json{{"deliveries", deliveries}}.dump());
    EXPECT_EQ(r.status, 202) << r.body;
    return clock_.Now();
  }

  static json Delivery(const std::string& platform, const std::string& credential,
                       const std::string& destination, json payload) {
    return {{"tenant", "acme"},
            {"platform", platform},
            {"destination", destination},
            {"credential", credential},
            {"payload", std::move(payload)}};
  }

  // Waits (bounded, for liveness only) until the simulator accepted `total`; calls `each` with
  // every poll's stats and the seconds since `start`.
  json WaitAccepted(int total, SteadyTime start, int timeout_ms,
                    const std::function<void(const json&, double)>& each = nullptr) {
    json stats;
    const SteadyTime until = clock_.Now() + Millis(timeout_ms);
    while (clock_.Now() < until) {
      stats = sim_->Stats();
      if (each) {
        each(stats, Seconds(start));
      }
      if (stats["totals"]["accepted"].get<int>() >= total) {
        return stats;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "timed out; last stats: " << stats["totals"].dump();
    return stats;
  }

  double Seconds(SteadyTime since) const {
    return std::chrono::duration<double>(clock_.Now() - since).count();
  }

  // LINE pushes over `users` users of one channel token.
  static json LinePushes(int total, int users) {
    json deliveries = json::array();
    for (int i = 0; i < total; ++i) {
      deliveries.push_back(Delivery("line", "lchan", fmt::format("U{:032x}", i % users),
                                    {{"messages", {{{"type", "text"}, {"text", "hi"}}}}}));
    }
    return deliveries;
  }

  SystemClock clock_;
  TempDir dir_;
  std::unique_ptr<SimProcess> sim_;
  std::unique_ptr<ChildProcess> node_;
  int port_ = 0;
  int run_ = 0;
};

// Verifies issue 15's LINE case: 200 pushes over 10 users of one channel token whose real limit
// is 20/s (LINE states none: no Retry-After, no X-RateLimit-*). The first decrease comes from what
// was sent, the first park is short (the profile's throttle_wait, 1 s), and the probe back up
// costs at most one 429 per window. Issue: <= 14 s (aim 10 s) with <= 20 429s; before, 79 of 200
// in 90 s.
TEST_F(PlatformScenariosTest, LineFindsAHiddenLimit) {
  for (int run = 0; run < Runs(); ++run) {
    StartRun({{"line", {{"rate_per_s", 20}}}});
    if (HasFatalFailure()) {
      return;
    }
    const SteadyTime start = Post(LinePushes(200, 10));
    const json stats = WaitAccepted(200, start, 90'000);
    const double seconds = Seconds(start);
    const int throttled = stats["totals"]["rate_limited"].get<int>();
    std::printf("LINE, 200 pushes at a hidden 20/s: %.2f s, %d 429s\n", seconds, throttled);
    EXPECT_LE(seconds, 20.0);
    EXPECT_LE(throttled, 25) << stats["totals"].dump();
    EXPECT_EQ(stats["totals"]["duplicates"], 0) << stats["totals"].dump();
  }
}

// Verifies issue 31's LINE case over loopback: 200 pushes over 10 users of one channel token
// whose hidden limit is a token bucket drawn per seed (10-50/s, burst 1-5; seed 1: 43/s burst
// 2), the simulator's answers 1-6 ms late: within the 1.4x the bound and 15 429s. Seeds
// 1-10 took 1.03-1.24x with 7-13 429s over three runs (before: 1.88x for seed 1). SCENARIO_RUNS=10
// for ten seeds.
TEST_F(PlatformScenariosTest, LineFindsAHiddenBucket) {
  for (int run = 0; run < Runs(); ++run) {
    sim::HiddenLimitSpec limit = DrawHiddenLimit(static_cast<uint64_t>(run + 1), 10, 50, 5);
    StartRun({{"seed", run + 1},
              {"latency_ms", 1},
              {"latency_jitter_ms", 5},
              {"line",
               {{"rate_per_s", static_cast<int>(limit.rate_per_s)},
                {"shape", "token_bucket"},
                {"burst", limit.burst}}}});
    if (HasFatalFailure()) {
      return;
    }
    limit.shape = sim::LimitShape::kTokenBucket;
    const SteadyTime start = Post(LinePushes(200, 10));
    const json stats = WaitAccepted(200, start, 120'000);
    const double seconds = Seconds(start);
    const double bound = HiddenLimitBound(limit, 200);
    const int throttled = stats["totals"]["rate_limited"].get<int>();
    std::printf(
        "LINE, 200 pushes, hidden bucket %.0f/s burst %d: %.2f s (%.2fx the bound), %d 429s\n",
        limit.rate_per_s, limit.burst, seconds, seconds / bound, throttled);
    EXPECT_LE(seconds, 1.4 * bound);
    EXPECT_LE(throttled, 15) << stats["totals"].dump();
    EXPECT_EQ(stats["totals"]["duplicates"], 0) << stats["totals"].dump();
  }
}

// Verifies the LINE drop: 200 pushes at a hidden 20/s that drops to 5/s five seconds in. The
// channel's adaptive limit (GET /v1/destinations, `adaptive.limit`) is at most 5 within 5 s of
// the drop (the bound), and the probes after it cost few 429s.
TEST_F(PlatformScenariosTest, LineConvergesAfterTheLimitDrops) {
  for (int run = 0; run < Runs(); ++run) {
    StartRun({{"line", {{"rate_per_s", 20}}}});
    if (HasFatalFailure()) {
      return;
    }
    const SteadyTime start = Post(LinePushes(200, 10));
    double dropped_at = -1;
    double converged_at = -1;
    int throttled_at_drop = 0;
    const json stats = WaitAccepted(200, start, 90'000, [&](const json& stats, double seconds) {
      if (dropped_at < 0 && seconds >= 5.0) {
        sim_->Configure({{"line", {{"rate_per_s", 5}}}});
        dropped_at = seconds;
        throttled_at_drop = stats["totals"]["rate_limited"].get<int>();
      }
      if (dropped_at < 0 || converged_at >= 0) {
        return;
      }
      const json list =
          HttpCallAs(kAdminToken, port_, "GET", "/v1/destinations?platform=line").Json();
      for (const json& d : list["destinations"]) {
        if (d.contains("adaptive") && d["adaptive"]["limit"].get<int64_t>() <= 5) {
          converged_at = seconds - dropped_at;
          return;
        }
      }
    });
    const int throttled = stats["totals"]["rate_limited"].get<int>();
    std::printf(
        "LINE, 200 pushes at 20/s dropping to 5/s at %.1f s: adaptive limit <= 5 after "
        "%.2f s; %.1f s in all, %d 429s (%d after the drop)\n",
        dropped_at, converged_at, Seconds(start), throttled, throttled - throttled_at_drop);
    EXPECT_GE(converged_at, 0.0) << "the adaptive limit never reached 5";
    EXPECT_LE(converged_at, 7.0);
    EXPECT_LE(throttled, 40) << stats["totals"].dump();
    EXPECT_EQ(stats["totals"]["duplicates"], 0) << stats["totals"].dump();
  }
}

// Verifies issue 15's Discord case: 500 messages over 50 channels (route 5 per 5 s, global 50/s)
// spend each channel's stated bucket: <= 9.5 s, 0 429s, 0 requests inside a stated wait.
// @discordjs/rest took 9.54 s; before, 10.6 s.
TEST_F(PlatformScenariosTest, DiscordSpendsTheStatedBucket) {
  for (int run = 0; run < Runs(); ++run) {
    StartRun(
        {{"discord", {{"global_per_s", 50}, {"bucket_limit", 5}, {"bucket_window_ms", 5000}}}});
    if (HasFatalFailure()) {
      return;
    }
    json deliveries = json::array();
    for (int i = 0; i < 500; ++i) {
      deliveries.push_back(Delivery("discord", "dbot",
                                    "channels/" + std::to_string(100000000000000000LL + i % 50),
                                    {{"content", "hi"}, {"seq", i}}));
    }
    const SteadyTime start = Post(deliveries);
    const json stats = WaitAccepted(500, start, 60'000);
    const double seconds = Seconds(start);
    std::printf("Discord, 500 over 50 channels: %.2f s, %d 429s, %d early\n", seconds,
                stats["totals"]["rate_limited"].get<int>(), stats["totals"]["early"].get<int>());
    EXPECT_LE(seconds, 11.0);
    EXPECT_EQ(stats["totals"]["rate_limited"], 0) << stats["totals"].dump();
    EXPECT_EQ(stats["totals"]["early"], 0) << stats["totals"].dump();
  }
}

// Verifies issue 31's Slack case over loopback: 20 channels x 5 at 1/s per channel, the
// profile guessing burst 3 and the simulator hiding a burst of 1, 2 or 3, its answers late by a
// seeded 1-6 ms: within 1.1x the bound ((5 - burst) s, loosened by 0.3 s for intake and a loaded
// machine) and at most two 429s in the workspace. SCENARIO_RUNS=10 runs the ten seeds.
TEST_F(PlatformScenariosTest, SlackLearnsTheBurstOncePerWorkspace) {
  for (int run = 0; run < Runs(); ++run) {
    for (int burst = 1; burst <= 3; ++burst) {
      StartRun({{"seed", run + 1},
                {"latency_ms", 1},
                {"latency_jitter_ms", 5},
                {"slack",
                 {{"channel_rate_per_s", 1},
                  {"channel_burst", burst},
                  {"workspace_rate_per_s", 1000},
                  {"workspace_burst", 1000}}}},
               "[budgets.slack_workspace]\nlimit = 1000\nscale_ms = 1000\nburst = 100\n");
      if (HasFatalFailure()) {
        return;
      }
      json deliveries = json::array();
      for (int i = 0; i < 100; ++i) {
        deliveries.push_back(Delivery("slack", "bot", fmt::format("C{}", 1000 + i % 20),
                                      {{"text", "hi"}, {"seq", i}}));
      }
      const SteadyTime start = Post(deliveries);
      const json stats = WaitAccepted(100, start, 60'000);
      const double seconds = Seconds(start);
      const double bound = 5.0 - burst;
      const int throttled = stats["totals"]["rate_limited"].get<int>();
      std::printf("Slack, hidden burst %d, seed %d: %.2f s (%.2fx the bound), %d 429s\n", burst,
                  run + 1, seconds, seconds / bound, throttled);
      EXPECT_LE(seconds, 1.1 * bound + 0.3) << "burst " << burst;
      EXPECT_LE(throttled, 2) << stats["totals"].dump();
      EXPECT_EQ(stats["totals"]["early"], 0) << stats["totals"].dump();
    }
  }
}

}  // namespace
}  // namespace egress
