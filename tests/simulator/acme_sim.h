#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "tests/simulator/sim_context.h"

namespace egress::sim {

// A made-up chat API ("acme") that exists only as a profile: POST
// /acme/v2/rooms/<room>/messages with an X-Acme-Key header (destination "acme:<room>"; the key is
// never in the stats). The limit is a fixed window per (key, room) whose windows begin at
// multiples of room_window_ms on the wall clock, so every request of a window sees the same
// reset time. Success and quota answers carry X-Acme-Quota-Limit, -Left and -Reset (epoch ms of
// the window's end). Over the limit the API answers 400 (429 with status_429) with
// error.code "quota_exceeded" and retry_in_ms in the body, no Retry-After; requests of that
// (key, room) before the window ends count early. Not thread-safe.
class AcmeSim {
 public:
  // POST /acme/v2/rooms/<room>/messages; `room` decoded.
  SimResponse PostMessage(SimContext& ctx, const SimRequest& req, const std::string& room);

  // Forgets the window counts (after a config change or reset).
  void ClearLimits();

 private:
  // The requests counted in one (key, room)'s current window.
  struct Window {
    int64_t index = 0;  // the window's start, in room_window_ms since the epoch
    int used = 0;
  };

  std::unordered_map<std::string, Window> windows_;  // by key "\n" room
  int64_t next_message_id_ = 1;
};

}  // namespace egress::sim
