#pragma once

#include <string>
#include <unordered_map>

#include "tests/simulator/sim_context.h"
#include "tests/simulator/token_bucket.h"

namespace egress::sim {

// Fake webhook receivers at /hooks/<name> (destination "hook:<name>"): Standard Webhooks
// signature check when the receiver has secrets, a per-receiver token bucket whose 429s carry
// Retry-After (seconds or HTTP-date) and are enforced, dedupe by webhook-id, and the receiver's
// FaultPlan. Not thread-safe.
class HookSim {
 public:
  SimResponse Receive(SimContext& ctx, const SimRequest& req, const std::string& name);

  void ClearLimits();

 private:
  std::unordered_map<std::string, TokenBucket> buckets_;
  std::unordered_map<std::string, SteadyTime> parked_until_;
};

}  // namespace egress::sim
