#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tests/simulator/sim_context.h"
#include "tests/simulator/sliding_window.h"
#include "tests/simulator/token_bucket.h"

namespace egress::sim {

// Fake Telegram Bot API: POST /bot<token>/sendMessage (destination "telegram:<chat id>"; the
// token is never in the stats). Limits per (token, chat) (token bucket), per (token, group) for
// negative chat ids (sliding window) and per token (token bucket). Over a limit: 429 with
// parameters.retry_after in the body and no Retry-After header; the (token, chat) is parked
// for that long and the park is enforced (requests inside it get 429 again and count early).
// Not thread-safe.
class TelegramSim {
 public:
  // `token` and `method` are the path's /bot<token>/<method> parts (method may hold '/').
  SimResponse Call(SimContext& ctx, const SimRequest& req, const std::string& token,
                   const std::string& method);

  // Forgets limiter state and parks (after a config change or reset).
  void ClearLimits();

 private:
  SimResponse SendMessage(SimContext& ctx, const std::string& token, const nlohmann::json& body,
                          const std::string& chat);
  // The remaining park of `key` at `now`, or zero.
  std::chrono::nanoseconds ParkLeft(const std::string& key, SteadyTime now) const;
  // The 429 for a wait of `wait`; parks `park_key` unless it is parked already. `global`: the
  // bot's own limit had no room.
  SimResponse RateLimited(SimContext& ctx, const std::string& dest, const std::string& park_key,
                          std::chrono::nanoseconds wait, bool global);

  std::unordered_map<std::string, TokenBucket> chat_buckets_;     // by token "\n" chat
  std::unordered_map<std::string, TokenBucket> bot_buckets_;      // by token
  std::unordered_map<std::string, SlidingWindow> group_windows_;  // by token "\n" chat
  std::unordered_map<std::string, SteadyTime> parked_until_;
  int64_t next_message_id_ = 1;
};

// The chat a sendMessage chat_id names, as the simulator keys it: an integer or a string of
// one as decimal text ("-1001234567890"), or a string "@channelusername" as it is; nullopt for
// anything else.
std::optional<std::string> TelegramChatId(const nlohmann::json& chat_id);

// True for a group or supergroup id: a negative integer.
bool IsTelegramGroup(std::string_view chat);

}  // namespace egress::sim
