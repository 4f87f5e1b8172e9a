#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "dispatcher/base/clock.h"
#include "tests/simulator/sim_message.h"

namespace egress::sim {

// Counters of one destination (a Slack token+channel, a Discord bucket or webhook, a LINE
// channel, a Telegram chat, a Teams conversation or token client, an acme room, a webhook
// receiver). Field meanings are documented in docs/simulator.md.
struct DestinationCounters {
  int64_t requests = 0;              // every request routed to the destination
  int64_t accepted = 0;              // requests the platform processed (message created)
  int64_t rate_limited = 0;          // 429s sent (including ok:false rate_limited)
  int64_t rate_limited_global = 0;   // of those, for a wider scope (a Discord bot's global limit)
  int64_t early = 0;                 // arrived before a previously given Retry-After/reset
  int64_t duplicates = 0;            // an idempotency identity accepted a second time
  int64_t duplicates_prevented = 0;  // a repeat the platform deduplicated (nonce, retry key)
  int64_t order_violations = 0;      // a payload "seq" lower than the last accepted one
  int64_t payloads = 0;              // accepted payload units (LINE multicast: recipients)
  int64_t errors = 0;                // other non-2xx answers (401, 404, 409, 5xx, ...)
  int64_t faults = 0;                // answers replaced by a configured fault
  int64_t signature_failures = 0;    // webhook signatures that did not verify
  int64_t tokens_issued = 0;         // access tokens a token endpoint issued (Teams)
  int64_t expired_tokens = 0;        // requests refused for an expired access token (Teams)

  void Add(const DestinationCounters& other);
};

// Per-destination bookkeeping: counters, "not before" times handed out to senders, accepted
// idempotency identities and the last accepted sequence per ordering key. Not thread-safe: the
// Simulator serialises access. Time comes from the caller.
class StatsBook {
 public:
  // Counts a request to `dest` at `now`; counts it early when `now` is before a time handed out
  // for `dest` or for `scope` (a wider key such as a Slack workspace or a Discord bot token).
  DestinationCounters& OnRequest(const std::string& dest, SteadyTime now,
                                 std::string_view scope = {});

  // Records that senders were told not to come back to `key` (a destination or scope) before
  // `until`. A later time replaces an earlier one.
  void SetNotBefore(const std::string& key, SteadyTime until);

  // Remembers an accepted identity (`kind` separates namespaces, e.g. "nonce", "msg_id") for
  // `dest`. Returns true when it was already accepted within `ttl` (the caller decides whether
  // that is a duplicate or a prevented duplicate). An expired entry is replaced.
  bool SeenAccepted(const std::string& dest, std::string_view kind, std::string_view identity,
                    SteadyTime now, std::chrono::nanoseconds ttl);

  // The value stored with an identity by RememberValue, if any and not expired.
  std::optional<std::string> AcceptedValue(const std::string& dest, std::string_view kind,
                                           std::string_view identity, SteadyTime now,
                                           std::chrono::nanoseconds ttl) const;
  void RememberValue(const std::string& dest, std::string_view kind, std::string_view identity,
                     std::string value, SteadyTime now);

  // Checks an accepted payload's sequence number against the last one of `ordering_key`; counts
  // an order violation on `dest` when it went backwards. Returns true when in order.
  bool CheckOrder(const std::string& dest, const std::string& ordering_key, int64_t seq);

  DestinationCounters& Counters(const std::string& dest) { return counters_[dest]; }
  const std::map<std::string, DestinationCounters>& all() const { return counters_; }
  DestinationCounters Totals() const;

  // Counts one platform request that arrived over `protocol`.
  void CountProtocol(SimProtocol protocol) { ++protocols_[static_cast<size_t>(protocol)]; }

  // Keeps the latest the server's loop ran (ServerOptions::on_loop_late): a request that arrived
  // then was stamped up to that late, so the windows may have counted it with later ones.
  void NoteLoopLate(std::chrono::nanoseconds late) {
    loop_late_max_ = std::max(loop_late_max_, late);
  }

  // {"destinations":{dest:{...}},"totals":{...},"protocols":{"http/1.1":n,"https/1.1":n,"h2":n},
  //  "loop_late_max_ms":n}.
  std::string ToJson() const;

  void Clear();

 private:
  struct Entry {
    SteadyTime at;
    std::string value;
  };

  std::map<std::string, DestinationCounters> counters_;
  int64_t protocols_[3] = {0, 0, 0};  // indexed by SimProtocol
  std::chrono::nanoseconds loop_late_max_{0};
  std::unordered_map<std::string, SteadyTime> not_before_;
  std::unordered_map<std::string, Entry> identities_;
  std::unordered_map<std::string, int64_t> last_seq_;
};

}  // namespace egress::sim
