#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dispatcher/base/clock.h"
#include "tests/simulator/accepted_fields.h"
#include "tests/simulator/destination_stats.h"
#include "tests/simulator/fault_book.h"
#include "tests/simulator/sim_config.h"
#include "tests/simulator/sim_message.h"

namespace egress::sim {

// What every platform simulation works with. Borrowed: all of it outlives the call. Access is
// serialised by the Simulator.
struct SimContext {
  const Clock& clock;
  const SimConfig& config;
  StatsBook& stats;
  FaultBook& faults;
};

// Runs `plan` for a request to `dest`. Returns the answer to send instead of the platform's
// (connection reset, storm or fixed status) and counts it; otherwise nullopt, and `decision`
// tells FinishFault what to do after the platform answered.
std::optional<SimResponse> StartFault(SimContext& ctx, const std::string& dest,
                                      const FaultPlan& plan, FaultDecision& decision);

// Applies the rest of a decision to the platform's answer: the after-accept replacement and the
// delay.
void FinishFault(SimContext& ctx, const std::string& dest, FaultDecision&& decision,
                 SimResponse& response);

// The accounting of an accepted payload on `dest`: accepted, `units` payloads, a payload
// "msg_id" seen before counts a duplicate, a payload "seq" below the last one of its
// "ordering_key" (default: the destination) counts an order violation.
void RecordAccepted(SimContext& ctx, const std::string& dest, const AcceptedFields& fields,
                    int64_t units);
// The same for a parsed payload; `body` may be null.
void RecordAccepted(SimContext& ctx, const std::string& dest, const nlohmann::json& body,
                    int64_t units);

// A Retry-After in whole seconds covering `wait` (rounded up, at least 1).
int64_t CeilSeconds(std::chrono::nanoseconds wait);

// "Bearer xyz" / "Bot xyz" -> "xyz"; empty when the scheme differs.
std::string TokenAfter(std::string_view authorization, std::string_view scheme);

// True when `list` holds `value`.
bool Contains(const std::vector<std::string>& list, std::string_view value);

}  // namespace egress::sim
