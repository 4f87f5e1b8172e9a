#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "tests/simulator/hidden_limit.h"
#include "tests/simulator/sim_context.h"

namespace egress::sim {

// Fake LINE Messaging API: push, multicast and reply (destination "line:<channel token>"). Every
// response carries X-Line-Request-Id; limits are per token and endpoint per second; 429s carry
// no Retry-After; X-Line-Retry-Key repeats of an accepted request get 409. Not thread-safe.
class LineSim {
 public:
  // `endpoint` is "push", "multicast" or "reply".
  SimResponse Send(SimContext& ctx, const SimRequest& req, const std::string& endpoint);

  void ClearLimits();
  // Also forgets the monthly usage.
  void Clear();

 private:
  SimResponse Process(SimContext& ctx, const SimRequest& req, const std::string& endpoint,
                      const std::string& request_id);
  std::string NewRequestId();
  HiddenLimit& Limit(const std::string& key, const LineConfig& cfg, SteadyTime now);
  // The 409 for a retry key accepted within its TTL.
  std::optional<SimResponse> Conflict(SimContext& ctx, const std::string& dest,
                                      const std::string& retry_key);
  SimResponse Accept(SimContext& ctx, const std::string& dest, const nlohmann::json& body,
                     const std::string& endpoint, int64_t recipients, const std::string& retry_key,
                     const std::string& request_id);

  std::unordered_map<std::string, HiddenLimit> windows_;
  std::unordered_map<std::string, int64_t> monthly_used_;
  int64_t next_request_ = 1;
  int64_t next_message_ = 1;
};

// True for the 8-4-4-4-12 hex form LINE requires of X-Line-Retry-Key.
bool IsRetryKeyFormat(std::string_view key);

}  // namespace egress::sim
