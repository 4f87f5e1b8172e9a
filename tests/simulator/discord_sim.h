#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tests/simulator/fixed_window.h"
#include "tests/simulator/sim_context.h"

namespace egress::sim {

// Fake Discord API v10: bot Create Message (destination "discord:channel:<id>", global scope
// "discord:bot:<token>") and Execute Webhook ("discord:webhook:<id>"). Buckets are fixed windows
// reported with X-RateLimit-* headers on every response; 429s come in the user, global and shared
// shapes of docs/simulator.md. Not thread-safe.
class DiscordSim {
 public:
  SimResponse CreateMessage(SimContext& ctx, const SimRequest& req, const std::string& channel);
  SimResponse ExecuteWebhook(SimContext& ctx, const SimRequest& req, const std::string& id);

  void ClearLimits();

 private:
  // The parts of a request shared by both routes once the bucket is known.
  struct Route {
    std::string dest;
    std::string bucket_key;
    int limit = 0;
    int64_t window_ms = 0;
    std::string author;  // the bot token; empty for webhooks
  };

  SimResponse Send(SimContext& ctx, const SimRequest& req, const Route& route,
                   const std::string& channel, bool want_body);
  // The per-bot global limit; the 429 to send when it is exhausted.
  std::optional<SimResponse> CheckGlobal(SimContext& ctx, const Route& route);
  // A 429 of `scope` "user" or "shared" for the route's bucket.
  SimResponse BucketLimited(SimContext& ctx, const Route& route, const FixedWindow::Outcome& o,
                            std::string_view scope, std::chrono::nanoseconds wait,
                            const std::string& hash);
  // Nonce handling and the message itself, once every limit passed.
  SimResponse Deliver(SimContext& ctx, const nlohmann::json& body, const Route& route,
                      const std::string& channel, bool want_body);
  FixedWindow& Window(std::unordered_map<std::string, FixedWindow>& map, const std::string& key,
                      int limit, int64_t window_ms);
  std::string BucketHash(const SimContext& ctx, int64_t request_number) const;
  std::string NewMessage(const std::string& channel, const nlohmann::json& body);

  std::unordered_map<std::string, FixedWindow> buckets_;
  std::unordered_map<std::string, FixedWindow> globals_;
  std::unordered_map<std::string, int64_t> bucket_requests_;
  int64_t next_id_ = 1;
};

}  // namespace egress::sim
