#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace egress::pacing {

// The outbound connections, as the transport will open them: at most `per_origin` per origin
// (scheme://host:port) and `total` in all. An origin seen answering over HTTP/2 carries
// `streams` requests on each connection. Zero for `per_origin` or `total`: unlimited.
struct ConnectionLimits {
  int64_t per_origin = 0;
  int64_t total = 0;
  int64_t streams = 1;
};

// The connection budget as a concurrency scope of the Scheduler: how many deliveries each origin
// has in flight, who waits for one of its connections, and who gets a freed one. Waiters are
// kept per origin and per tenant; a freed connection goes by deficit round robin across the
// tenants waiting there (quantum × tenant weight against the head's cost), then to the tenant's
// destinations in arrival order (a destination waits with its head only, so its next head queues
// behind the tenant's other destinations: round robin across destinations).
//
// A granted connection is reserved for the destination it went to until Take() (it is sent) or
// Return() (it is not, e.g. a budget holds it back): nobody overtakes a waiter. Local state of
// one Scheduler (not in a BudgetStore): connections belong to this process's transport.
// Not thread-safe (the dispatcher loop).
class ConnectionBudget {
 public:
  static constexpr uint32_t kNoOrigin = UINT32_MAX;

  ConnectionBudget(ConnectionLimits limits, int64_t quantum);

  // The origin's index, counting one more destination on it. kNoOrigin for an empty origin (no
  // connection limit applies) or when no limit is configured.
  uint32_t Acquire(std::string_view origin);
  // Drops one destination's reference; forgets the origin when it is unused and idle.
  void Release(uint32_t origin);

  // Whether a destination that holds no grant may take a connection of `origin` now: there is
  // room and nobody waits for one.
  bool HasRoom(uint32_t origin) const;
  // One more delivery in flight on `origin`; `granted` when it used a grant.
  void Take(uint32_t origin, bool granted);
  // One delivery of `origin` finished.
  void Give(uint32_t origin);
  // A grant given to a destination that did not send.
  void Return(uint32_t origin);
  // Queues destination `d` of `tenant` (weight, head cost) for a connection of `origin`. With
  // `first`, `d` had a grant and gave it back (a meter held it a moment): it is served before
  // anyone else, its tenant's turn refunded, so a paced destination does not lose its turn.
  void Wait(uint32_t origin, uint32_t tenant, uint32_t weight, uint32_t d, int64_t cost,
            bool first = false);
  // The origin multiplexes (HTTP/2): its capacity becomes per_origin × streams.
  void SetMultiplexed(uint32_t origin);

  // Destinations granted a connection since the last call (each once), to be made ready.
  std::vector<uint32_t> TakeGrants();

  int64_t in_flight(uint32_t origin) const;
  int64_t capacity(uint32_t origin) const;
  bool multiplexed(uint32_t origin) const;
  size_t waiting(uint32_t origin) const;
  int64_t total_connections() const { return total_used_; }
  size_t origin_count() const { return index_.size(); }

 private:
  struct TenantWait {
    uint32_t tenant = 0;
    uint32_t weight = 1;
    int64_t deficit = 0;
    bool turn = false;
    std::deque<std::pair<uint32_t, int64_t>> dests;  // destination, head cost
  };
  struct Origin {
    std::string name;
    int64_t in_flight = 0;
    int64_t granted = 0;
    uint32_t refs = 0;
    bool multiplexed = false;
    bool live = false;
    bool queued_for_total = false;  // in waiting_origins_
    size_t waiters = 0;
    std::deque<TenantWait> ring;
  };

  int64_t Connections(const Origin& o, int64_t requests) const;
  bool Fits(const Origin& o) const;  // one more request fits the origin and the total
  void Use(Origin& o, int64_t delta);
  // Grants freed room of `o` to its waiters; with `others`, then to other origins' waiters.
  void Grant(uint32_t o, bool others);
  bool GrantOne(Origin& o);
  void MaybeForget(uint32_t o);

  ConnectionLimits limits_;
  int64_t quantum_;
  std::vector<Origin> origins_;
  std::vector<uint32_t> free_;
  std::unordered_map<std::string, uint32_t> index_;
  int64_t total_used_ = 0;  // connections (HTTP/2: ceil(requests / streams) per origin)
  std::deque<uint32_t> waiting_origins_;  // origins with waiters held back by the total
  std::vector<uint32_t> grants_;
};

}  // namespace egress::pacing
