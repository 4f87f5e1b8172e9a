#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/platform_adapter.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/rate_limit_observation.h"

namespace egress::adapters {

// Discord bans a sender for a while after 10,000 invalid requests (401, 403 and 429 except
// shared-scope 429s) in 10 minutes. This counts them per token in a sliding window and says when
// a token must stop, well before the ban line.
//
// The window is kept as kSlots slots of window/kSlots each; an invalid request counts until its
// slot has wholly left the window, so the count is never lower than the exact sliding count
// (at most one slot, 10 s by default, longer). Memory: one small fixed array per token seen;
// Sweep() forgets tokens with nothing in the window. Times are passed in (steady), nothing reads
// a clock. Not thread-safe: all methods run on the dispatcher loop.
class InvalidRequestCounter {
 public:
  struct Options {
    // Invalid requests in `window` at which a token stops. Default: 5,000 (half the ban line).
    int64_t threshold = 5000;
    // Default: 10 minutes.
    Millis window{600'000};
  };

  static constexpr int kSlots = 60;

  InvalidRequestCounter();
  explicit InvalidRequestCounter(Options options);

  // True for what Discord counts: 401, 403, and 429 unless its scope is shared.
  static bool Counts(int http_status, pacing::RateLimitScope scope);

  // Records one response for `token_key` (a stable identity of the token, never the secret) if
  // it counts; returns StopUntil(token_key, now).
  std::optional<SteadyTime> Record(std::string_view token_key, int http_status,
                                   pacing::RateLimitScope scope, SteadyTime now);
  // The same for an adapter's report (its HTTP status and observation scope).
  std::optional<SteadyTime> Record(std::string_view token_key, const AttemptReport& report,
                                   SteadyTime now);

  // Invalid requests of `token_key` counted at `now`.
  int64_t Count(std::string_view token_key, SteadyTime now) const;

  // nullopt while the token is under the threshold; otherwise the time at which enough of its
  // invalid requests have left the window for it to send again.
  std::optional<SteadyTime> StopUntil(std::string_view token_key, SteadyTime now) const;

  // Forgets tokens with nothing left in the window.
  void Sweep(SteadyTime now);

  // One slot of a count kept elsewhere (the cluster's, in Redis): `age` slots before the current
  // one (0 = the current slot), and the invalid requests counted in it by every node.
  struct SlotCount {
    int64_t age = 0;
    int64_t count = 0;
  };
  // Raises each slot of `token_key` to the shared count for it (which includes this node's own
  // invalid requests), so that StopUntil sees what all nodes together sent. Never lowers a slot.
  // Ages outside [0, kSlots) are ignored and counts are clamped to [0, kMaxSharedCount]: the
  // values come from outside the process.
  void MergeShared(std::string_view token_key, const std::vector<SlotCount>& slots, SteadyTime now);
  static constexpr int64_t kMaxSharedCount = int64_t{1} << 40;

  size_t tracked_tokens() const { return windows_.size(); }

 private:
  struct Slot {
    int64_t index = 0;  // which slot of time (now / slot length) the count belongs to
    int64_t count = 0;
  };
  using Window = std::array<Slot, kSlots>;

  int64_t SlotIndex(SteadyTime t) const;
  Window& WindowOf(std::string_view token_key);
  static Slot& SlotOf(Window& window, int64_t index);
  int64_t Live(const Window& window, int64_t current) const;

  Options options_;
  int64_t slot_ns_;
  std::map<std::string, Window, std::less<>> windows_;
};

}  // namespace egress::adapters
