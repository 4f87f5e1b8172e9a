#pragma once

#include <functional>
#include <string>
#include <vector>

#include "adapters/invalid_request_counter.h"
#include "adapters/redis_connection.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "dispatcher/base/status.h"

namespace egress::adapters {

// Discord's invalid-request count of a bot token, shared by every node through the Redis of the
// budgets (docs/deployment.md): Discord bans the token, not a node, so the 10,000-in-10-minutes
// line holds for what all nodes together send. Add counts one invalid request in the hash
// "<prefix>discord_invalid:<token_key>" (a field per slot of window / kSlots, on Redis' clock),
// drops the slots that have left the window, and answers every live slot's count as
// InvalidRequestCounter::SlotCount (age, count) for InvalidRequestCounter::MergeShared. The hash
// expires a slot after the window when no node adds to it. `token_key` is the token's stable
// identity, never the secret.
//
// All calls and callbacks run on the connection's loop; `connection` must outlive this object.
class RedisInvalidRequests {
 public:
  using SlotCounts = std::vector<InvalidRequestCounter::SlotCount>;
  // kUnavailable when Redis cannot be reached or answers something else than the script does.
  using Answer = Result<SlotCounts>;
  using Done = std::function<void(Answer)>;

  RedisInvalidRequests(RedisConnection& connection, std::string key_prefix, Millis window);
  RedisInvalidRequests(const RedisInvalidRequests&) = delete;
  RedisInvalidRequests& operator=(const RedisInvalidRequests&) = delete;

  void Add(const std::string& token_key, Done done);

 private:
  RedisConnection& connection_;
  std::string prefix_;
  int64_t slot_ms_;
};

}  // namespace egress::adapters
