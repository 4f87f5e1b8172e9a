#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/simulator/sim_context.h"
#include "tests/simulator/sliding_window.h"

namespace egress::sim {

// Fake Microsoft Teams through the Bot Framework connector: the client-credentials token
// endpoint (destination "teams-token:<client id>") and Send to Conversation / Reply to Activity
// (destination "teams:<conversation id>"). Issued tokens are remembered with their client and
// expiry; an activity needs a live one (401 otherwise; an expired one also counts
// expired_tokens). Limits are sliding windows per (client, conversation) and per client, all of
// which must have room; a 429 carries Retry-After and parks the (client, conversation) for that
// long, and the park is enforced. Not thread-safe.
class TeamsSim {
 public:
  // POST /botframework.com/oauth2/v2.0/token, an application/x-www-form-urlencoded body.
  SimResponse IssueToken(SimContext& ctx, const SimRequest& req);
  // POST /v3/conversations/<conversation>/activities[/<activity id>]; `conversation` decoded.
  SimResponse SendActivity(SimContext& ctx, const SimRequest& req, const std::string& conversation);

  // Forgets limiter windows, parks and the 412 counts (after a config change or reset).
  void ClearLimits();
  // Also forgets the issued tokens.
  void Clear();

 private:
  struct IssuedToken {
    std::string client_id;
    SteadyTime expires;
  };

  std::string NewAccessToken();
  // The windows of `key`, made from `limits` on first use.
  std::vector<SlidingWindow>& Windows(
      std::unordered_map<std::string, std::vector<SlidingWindow>>& map, const std::string& key,
      const std::vector<WindowLimit>& limits);
  // The remaining park of `key` at `now`, or zero.
  std::chrono::nanoseconds ParkLeft(const std::string& key, SteadyTime now) const;
  // The 429 for a wait of `wait`; parks `park_key` unless it is parked already. `global`: the
  // app's own limit had no room.
  SimResponse RateLimited(SimContext& ctx, const std::string& dest, const std::string& park_key,
                          std::chrono::nanoseconds wait, bool global);

  std::unordered_map<std::string, IssuedToken> tokens_;  // by access token
  // By client "\n" conversation, and by client.
  std::unordered_map<std::string, std::vector<SlidingWindow>> conversation_windows_;
  std::unordered_map<std::string, std::vector<SlidingWindow>> app_windows_;
  std::unordered_map<std::string, SteadyTime> parked_until_;
  std::unordered_map<std::string, int64_t> activity_requests_;  // by destination, for 412s
  uint64_t next_token_ = 1;
  int64_t next_activity_ = 1;
};

}  // namespace egress::sim
