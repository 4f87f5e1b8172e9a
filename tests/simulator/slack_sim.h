#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "tests/simulator/sim_context.h"
#include "tests/simulator/token_bucket.h"

namespace egress::sim {

// Fake Slack: chat.postMessage (destinations "slack:<token>:<channel>", workspace scope
// "slack:<token>") and incoming webhooks /services/... ("slack-hook:<path>"). Limits are token
// buckets; a 429 parks the key for its Retry-After and the park is enforced. Not thread-safe.
class SlackSim {
 public:
  SimResponse PostMessage(SimContext& ctx, const SimRequest& req);
  SimResponse IncomingWebhook(SimContext& ctx, const SimRequest& req);

  // Forgets limiter state and parks (after a config change or reset).
  void ClearLimits();

 private:
  TokenBucket& Bucket(std::unordered_map<std::string, TokenBucket>& map, const std::string& key,
                      double rate, double burst, SteadyTime now);
  // The remaining park of `key` at `now`, or zero.
  std::chrono::nanoseconds ParkLeft(const std::string& key, SteadyTime now) const;
  SimResponse RateLimited(SimContext& ctx, const std::string& dest, const std::string& park_key,
                          std::chrono::nanoseconds wait);

  std::unordered_map<std::string, TokenBucket> channel_buckets_;
  std::unordered_map<std::string, TokenBucket> workspace_buckets_;
  std::unordered_map<std::string, TokenBucket> hook_buckets_;
  std::unordered_map<std::string, SteadyTime> parked_until_;
  int64_t next_ts_ = 1;
};

}  // namespace egress::sim
