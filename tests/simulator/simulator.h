#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "tests/simulator/acme_sim.h"
#include "tests/simulator/destination_stats.h"
#include "tests/simulator/discord_sim.h"
#include "tests/simulator/fault_book.h"
#include "tests/simulator/hook_sim.h"
#include "tests/simulator/line_sim.h"
#include "tests/simulator/sim_config.h"
#include "tests/simulator/slack_sim.h"
#include "tests/simulator/teams_sim.h"
#include "tests/simulator/telegram_sim.h"

namespace egress::sim {

// The whole fake: routes a request to Slack, Discord, LINE, Telegram, Microsoft Teams, the
// made-up acme API, a webhook receiver or the control endpoints (/_sim/config, /_sim/reset,
// /_sim/stats), see docs/simulator.md. Handle is thread-safe (one mutex around all state). `clock`
// must outlive the Simulator.
class Simulator {
 public:
  // InvalidArgument when `config_json` is not a valid configuration.
  static Result<std::unique_ptr<Simulator>> Create(const Clock& clock, std::string config_json);

  SimResponse Handle(const SimRequest& req);

  // Notes how late the server's loop ran (ServerOptions::on_loop_late), for the stats.
  void NoteLoopLate(std::chrono::nanoseconds late);

  // The stats document, as GET /_sim/stats returns it.
  std::string StatsJson();

 private:
  Simulator(const Clock& clock, SimConfig config, std::string config_json);

  SimResponse HandleControl(const SimRequest& req);
  SimResponse HandlePlatform(const SimRequest& req);
  // Applies a merge patch; resets limiter windows and fault counters, keeps stats.
  SimResponse Reconfigure(const std::string& patch);
  void ClearLimits();

  // The configured latency of one answer: latency_ms plus a seeded draw of up to
  // latency_jitter_ms.
  int Latency();

  const Clock& clock_;
  std::mutex mu_;
  uint64_t latency_state_;
  SimConfig config_;
  std::string config_json_;
  StatsBook stats_;
  FaultBook faults_;
  SlackSim slack_;
  DiscordSim discord_;
  LineSim line_;
  TelegramSim telegram_;
  TeamsSim teams_;
  AcmeSim acme_;
  HookSim hooks_;
};

}  // namespace egress::sim
