#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatcher/pacing/lane_queue.h"
#include "dispatcher/pacing/priority.h"

namespace egress::pacing {

// The outbound connections, as the transport will open them: at most `per_origin` per origin
// (scheme://host:port) and `total` in all. An origin seen answering over HTTP/2 carries
// `streams` requests on each connection. Zero for `per_origin` or `total`: unlimited. `ahead`:
// requests an origin may have dispatched beyond what its connections carry; they wait, leased,
// in the send gate (ConnectionBudget::StartSend) and take a freed connection the moment it is
// free, instead of after a dispatch and a store write. Default: 0 (the service sets it).
// `reserve`: connections of the total kept for tenants under their share (see ConnectionBudget);
// negative: total / 8, at least 1 when total > 1 (the default).
struct ConnectionLimits {
  int64_t per_origin = 0;
  int64_t total = 0;
  int64_t streams = 1;
  int64_t ahead = 0;
  int64_t reserve = -1;
};

// The connection budget as a concurrency scope of the Scheduler, in two steps:
//  - slots: how many deliveries each origin has dispatched (its connections' capacity plus
//    `ahead`); a head that finds none waits (Wait) and is granted a freed slot (TakeGrants);
//  - the send gate: a dispatched request takes a connection (StartSend) or waits for one, and is
//    granted the next freed one at once, when the transfer that held it ends (EndSend,
//    TakeSendGrants): the transport itself never queues a request behind others.
// Both hand what is freed to the waiting tenant with the smallest weighted share of what it holds
// at that origin (max-min fair share of concurrency: held / weight; ties by who was served
// least recently), then round the tenant's destinations (a destination waits with its head only,
// so its next head queues behind the tenant's other destinations). A tenant whose requests hold
// a connection long (a slow receiver) thus never starves one whose requests are quick: the quick
// one holds little, so it wins every slot it frees, and the slow one uses all the rest.
//
// The total is shared by tenant as well as by origin: a tenant may hold connections of the total
// up to `total - reserve` in all while nobody else needs them, and past that only while it holds
// less than its weighted share of `total - reserve` among the tenants holding or waiting for
// connections; the `reserve` is there for a tenant under its share, which thus gets a connection
// at once however many another holds. So a tenant whose receivers never answer holds at most
// `total - reserve` of the total, and once others come, its connections that end go to them
// until it is down to its share: what its stuck requests hold counts against it only.
//
// A granted slot is reserved for the destination it went to until Take() (it is dispatched) or
// Return() (it is not, e.g. a budget holds it back): nobody overtakes a waiter. Local state of
// one Scheduler (not in a BudgetStore): connections belong to this process's transport.
// Not thread-safe (the dispatcher loop).
class ConnectionBudget {
 public:
  static constexpr uint32_t kNoOrigin = UINT32_MAX;

  explicit ConnectionBudget(ConnectionLimits limits);

  // The origin's index, counting one more destination on it. kNoOrigin for an empty origin (no
  // connection limit applies) or when no limit is configured.
  uint32_t Acquire(std::string_view origin);
  // Drops one destination's reference; forgets the origin when it is unused and idle.
  void Release(uint32_t origin);

  // Whether a destination of `tenant` that holds no grant may take a slot of `origin` now: there
  // is room and nobody waits for one; or the tenant holds less than its share of the origin's
  // connections (capacity / tenants there), so a tenant that holds little never waits behind
  // the slots another leased ahead: it waits for a connection in the send gate only, where it
  // wins the next freed one. The total is respected either way.
  bool HasRoom(uint32_t origin, uint32_t tenant) const;
  // One more delivery of `tenant` dispatched to `origin`; `granted` when it used a grant.
  void Take(uint32_t origin, uint32_t tenant, bool granted);
  // One delivery of `tenant` to `origin` finished (after EndSend() when it had been sent).
  void Give(uint32_t origin, uint32_t tenant);
  // A grant given to a destination of `tenant` that did not dispatch.
  void Return(uint32_t origin, uint32_t tenant);
  // Queues destination `d` of `tenant` (weight) for a slot of `origin`, its head of `priority`:
  // the tenant's waiting destinations are served most urgent first (LaneQueue), in arrival
  // order within a priority; tenants keep their shares whatever their waiters' priorities.
  // With `first`, `d` had a grant and gave it back (a meter held it a moment): it is served
  // before its tenant's other destinations of its priority and, at an equal share, before the
  // other tenants.
  void Wait(uint32_t origin, uint32_t tenant, uint32_t weight, uint32_t d,
            Priority priority = Priority::kNormal, bool first = false);
  // A waiting destination's head changed priority: it moves to the back of that priority's
  // waiters. No-op when `d` does not wait at `origin`.
  void Rewait(uint32_t origin, uint32_t tenant, uint32_t d, Priority priority);
  // The origin multiplexes (HTTP/2): its capacity becomes per_origin × streams.
  void SetMultiplexed(uint32_t origin);
  // The tenant's weight in the total's shares (default 1; Wait and StartSend also set it).
  void SetWeight(uint32_t tenant, uint32_t weight);

  // Destinations granted a slot since the last call (each once), to be made ready.
  std::vector<uint32_t> TakeGrants();

  // A dispatched request of `tenant` (weight) is about to be sent: true when it holds a
  // connection of `origin` now (until EndSend()); false when it waits for one, `token` then
  // comes out of TakeSendGrants() when a connection is held for it. The tenant's waiting
  // requests get its connections most urgent first (`priority`), then in arrival order.
  bool StartSend(uint32_t origin, uint32_t tenant, uint32_t weight, uint64_t token,
                 Priority priority = Priority::kNormal);
  // A sent request of `tenant` got its answer (or failed): its connection goes to the next
  // waiting request at once (TakeSendGrants()).
  void EndSend(uint32_t origin, uint32_t tenant);
  // Instead of EndSend(): the connection of a sent request of `tenant` that got its answer stays
  // the tenant's, for its next request (StartSend takes it first), when it was the tenant's only
  // one at the origin, others wait for one and one connection is within the tenant's share
  // (capacity / tenants there): a tenant sending one request after another keeps one connection
  // instead of waiting each time for one a slow tenant frees (those come in bunches). False: not
  // kept, EndSend() was done. Unkeep() gives it back.
  bool Keep(uint32_t origin, uint32_t tenant);
  // Gives back every connection `tenant` keeps at `origin` (its next request did not come).
  void Unkeep(uint32_t origin, uint32_t tenant);
  // The tokens granted a connection since the last call, in grant order: send them now.
  std::vector<uint64_t> TakeSendGrants();

  // Dispatched (slots in use) and sending (on a connection, kept ones included) requests of the
  // origin.
  int64_t in_flight(uint32_t origin) const;
  int64_t sending(uint32_t origin) const;
  // The requests the origin's connections carry at once (connections, or HTTP/2 streams).
  int64_t capacity(uint32_t origin) const;
  bool multiplexed(uint32_t origin) const;
  // Destinations waiting for a slot, and requests waiting for a connection.
  size_t waiting(uint32_t origin) const;
  size_t waiting_to_send(uint32_t origin) const;
  // The connections `tenant` keeps at `origin` for its next request (Keep), and all tenants'.
  int64_t kept(uint32_t origin, uint32_t tenant) const;
  int64_t kept(uint32_t origin) const;
  int64_t total_connections() const { return total_used_; }
  // The connections of the total the tenant's slots hold, over every origin.
  int64_t tenant_connections(uint32_t tenant) const;
  int64_t reserve() const { return limits_.reserve; }
  size_t origin_count() const { return index_.size(); }

 private:
  // A waiting tenant's place in a queue: smallest held / weight first, then least recently
  // served (stamp), then tenant index.
  struct QueueKey {
    int64_t held = 0;
    uint32_t weight = 1;
    uint64_t stamp = 0;
    uint32_t tenant = 0;
  };
  struct ByShare {
    bool operator()(const QueueKey& a, const QueueKey& b) const;
  };
  using Queue = std::set<QueueKey, ByShare>;
  // One tenant at one origin.
  struct Share {
    uint32_t weight = 1;
    int64_t held = 0;           // slots: dispatched or granted
    int64_t sending = 0;        // on a connection
    int64_t kept = 0;           // connections kept for its next request (Keep)
    LaneQueue<uint32_t> dests;  // waiting for a slot, with their heads
    LaneQueue<uint64_t> sends;  // waiting for a connection
    QueueKey slot_key;          // its key in slot_queue while dests is not empty
    QueueKey send_key;          // its key in send_queue while sends is not empty
    int64_t conns = 0;          // connections of the total its slots hold (TenantConnections)
  };
  // One tenant over every origin: its part of the total.
  struct TenantTotal {
    uint32_t weight = 1;
    int64_t conns = 0;    // the sum of its Share::conns
    size_t waiting = 0;   // its destinations waiting for a slot, at any origin
    bool active = false;  // conns or waiting: counted in active_weight_
  };
  struct Origin {
    std::string name;
    int64_t in_flight = 0;
    int64_t granted = 0;
    int64_t sending = 0;
    uint32_t refs = 0;
    bool multiplexed = false;
    bool queued_for_total = false;  // in waiting_origins_
    size_t waiters = 0;
    size_t send_waiters = 0;
    std::unordered_map<uint32_t, Share> tenants;
    Queue slot_queue;
    Queue send_queue;
  };

  int64_t SlotCapacity(const Origin& o) const;
  int64_t CapacityOf(const Origin& o) const;
  // The connections `requests` dispatched to `o` may open (those beyond its capacity wait).
  int64_t Connections(const Origin& o, int64_t requests) const;
  bool Fits(const Origin& o) const;  // one more slot fits the origin and the total
  bool FitsTotal(const Origin& o) const;
  bool UnderShare(const Origin& o, uint32_t tenant) const;
  // The connections of the total `held` slots of one tenant at `o` count for.
  int64_t TenantConnections(const Origin& o, int64_t held) const;
  // Whether one more slot of `tenant` at `o` fits the tenant's part of the total.
  bool TenantFits(const Origin& o, uint32_t tenant) const;
  // After a change of s.held (or of the origin's multiplexing): the tenant's connections again.
  void Recount(const Origin& o, uint32_t tenant, Share& s);
  void CountWaiting(uint32_t tenant, int delta);
  void UpdateActive(TenantTotal& t);
  void Free(uint32_t origin, uint32_t tenant, int64_t in_flight_delta, int64_t granted_delta);
  void Count(Origin& o, int64_t in_flight_delta, int64_t granted_delta);
  // Re-sorts `s` in `queue` after its held count changed (`sends`: the send queue).
  void Requeue(Origin& o, uint32_t tenant, Share& s, bool sends, bool served);
  // Grants freed slots of `o` to its waiters; with `others`, then to other origins' waiters.
  void Grant(uint32_t o, bool others);
  bool GrantOne(Origin& o);
  void GrantSends(Origin& o);
  void MaybeForgetTenant(Origin& o, uint32_t tenant);
  void MaybeForget(uint32_t o);

  ConnectionLimits limits_;
  std::vector<Origin> origins_;
  std::vector<uint32_t> free_;
  std::unordered_map<std::string, uint32_t> index_;
  int64_t total_used_ = 0;  // connections (HTTP/2: ceil(requests / streams) per origin)
  std::deque<uint32_t> waiting_origins_;  // origins with waiters held back by the total
  std::unordered_map<uint32_t, TenantTotal> tenant_totals_;
  int64_t active_weight_ = 0;  // the weights of the tenants holding or waiting for connections
  std::vector<uint32_t> grants_;
  std::vector<uint64_t> send_grants_;
  uint64_t stamp_ = 0;
};

}  // namespace egress::pacing
