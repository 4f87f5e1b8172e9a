#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "dispatcher/base/clock.h"
#include "tests/simulator/sim_config.h"
#include "tests/simulator/sim_message.h"

namespace egress::sim {

// What a FaultPlan does to one request.
struct FaultDecision {
  bool reset_connection = false;
  int delay_ms = 0;
  // The answer replacing the platform's, if any; Retry-After already set.
  std::optional<SimResponse> replacement;
  // The platform processes the request first (its stats count it accepted), then the
  // replacement is sent.
  bool after_accept = false;
  // Seconds the replacement's Retry-After asks for, when it asks (for "early" accounting).
  std::optional<int> retry_after_s;
};

// Counts requests per destination to run each destination's FaultPlan ("the first N requests").
// Not thread-safe: the Simulator serialises access.
class FaultBook {
 public:
  FaultDecision Decide(const std::string& dest, const FaultPlan& plan, WallTime wall_now);
  void Clear() { seen_.clear(); }

 private:
  std::unordered_map<std::string, int64_t> seen_;
};

}  // namespace egress::sim
