#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatcher/base/chunked_vector.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/random.h"
#include "dispatcher/base/result.h"
#include "dispatcher/pacing/adaptive_pace.h"
#include "dispatcher/pacing/budget_store.h"
#include "dispatcher/pacing/budget_table.h"
#include "dispatcher/pacing/connection_budget.h"
#include "dispatcher/pacing/defer_reason.h"
#include "dispatcher/pacing/delivery_outcome.h"
#include "dispatcher/pacing/learned_share.h"
#include "dispatcher/pacing/packed_id.h"
#include "dispatcher/pacing/rate_limit_observation.h"
#include "dispatcher/pacing/retry_policy.h"
#include "dispatcher/pacing/scope_path.h"
#include "dispatcher/pacing/scope_table.h"
#include "dispatcher/pacing/sliding_window.h"
#include "dispatcher/pacing/timer_heap.h"
#include "dispatcher/pacing/wait_lanes.h"
#include "dispatcher/pacing/work_item.h"

namespace egress::pacing {

// A destination known to the Scheduler. Valid until RemoveDestination().
struct DestinationId {
  uint32_t value = UINT32_MAX;
  friend bool operator==(DestinationId, DestinationId) = default;
};

// A per-platform table with every entry `value`.
template <typename T>
constexpr std::array<T, kMaxPlatforms> PerPlatform(T value) {
  std::array<T, kMaxPlatforms> out{};
  out.fill(value);
  return out;
}

// Default in-flight cap per destination: 1 for Slack and Discord (serial per bucket), 4 for
// every other platform.
constexpr std::array<int, kMaxPlatforms> DefaultInFlightPerDestination() {
  std::array<int, kMaxPlatforms> out = PerPlatform(4);
  out[PlatformIndex(Platform::kSlack)] = out[PlatformIndex(Platform::kDiscord)] = 1;
  return out;
}

struct SchedulerOptions {
  // In-flight cap per destination, by platform (PlatformIndex). Default:
  // DefaultInFlightPerDestination().
  std::array<int, kMaxPlatforms> max_in_flight_per_destination = DefaultInFlightPerDestination();
  // In-flight cap per platform, so a slow receiver cannot take every connection. Default: 256.
  std::array<int, kMaxPlatforms> max_in_flight_per_platform = PerPlatform(256);
  // The transport's connections (per origin, total, HTTP/2 streams per connection, requests
  // leased ahead), scheduled as a concurrency scope: a delivery is dispatched only when its
  // origin has a slot for it (DestinationSpec::origin), else it waits with reason `connections`;
  // a dispatched one takes a connection through StartSend(). Freed slots and connections go to
  // the waiting tenant holding the smallest weighted share of the origin (ConnectionBudget).
  // Default: unlimited (the service sets [transport] max_host_connections,
  // max_total_connections and max_concurrent_streams, and leases as many ahead as per origin).
  ConnectionLimits connections;
  // A connection freed by a tenant under its share of the origin stays that tenant's while the
  // destination's next head is due within this long, until this long after it is due (the
  // lease between dispatch and StartSend), if others wait for connections
  // (ConnectionBudget::Keep): a tenant sending one request after another keeps one connection
  // instead of waiting for one a slow tenant frees. 0: never kept. Default: 25 ms.
  Millis connection_keep{25};
  // Deficit round robin quantum in cost units, multiplied by the tenant weight. Default: 1.
  int64_t quantum = 1;
  // Added to every remaining == 0 reset wait (discord.js offset). Default: 50 ms.
  Millis reset_offset{50};
  // Discord's global limit as a window (docs/pacing.md, "Discord's global limit"): at most
  // `limit` requests of a bot token in any `scale_ms` + global_window_offset, this process's
  // sends counted in a sliding window; the discord_global meter then bursts up to its limit.
  // False: the meter alone, as configured (the service sets it with shared budgets: the window
  // sees one process's sends only). Default: true.
  bool discord_global_window = true;
  // Added to the window: covers this much variation of the requests' latency. Default: 25 ms.
  Millis global_window_offset{25};
  // Every meter paces this fraction under its budget (the emission interval grows by it), so
  // jitter on the way cannot land a send on the wrong side of a platform's own meter. Budgets
  // shown and learned stay as they are. 0 to 0.5. Default: 0 (the service configures it:
  // server.pacing_margin).
  double pacing_margin = 0;
  // The wait after the budget store fails. Default: 1 s.
  Millis store_retry{1000};
  // Retry policy per platform profile.
  std::array<RetryPolicy, kMaxPlatforms> retry{};
  // The scopes of each profile platform (BuildScopePath); empty for the built-in ones.
  std::array<PlatformScopes, kMaxPlatforms> scopes{};
  // Global retry budget: transient failures beyond it wait with reason retry_budget.
  // Default: 100 retries per second, burst 100.
  Budget retry_budget{100, 1000, 100};
  // The most of each shared scope of a path (every scope other destinations also use) that
  // `bulk` heads may take (Priority): a bulk dispatch also takes from a meter at this share of
  // the scope's budget (its rate and its burst), so normal and high work always finds the rest
  // even when it arrives after a broadcast has filled every wait list. Bulk heads held by it
  // wait with reason bulk_share. [0.01, 1] (clamped); 1: no cap. Default: 0.8 (the service
  // configures it: [server] bulk_share).
  double bulk_share = 0.8;
  // How the destination's own key slows down on 429s without usable headers and probes back up.
  AdaptivePaceOptions adaptive;
};

// What to do now.
struct Decision {
  enum class Kind : uint8_t {
    kDispatch,  // send `delivery_id` of `destination` now; then Offer() its next head
    kWait,      // nothing may go before `wake_at`; call Next() again then (or after any call)
    kIdle,      // nothing is waiting on time; only Offer(), OnOutcome() or Enable() add work
  };
  Kind kind = Kind::kIdle;
  DestinationId destination;
  std::string delivery_id;
  uint64_t sequence = 0;
  SteadyTime wake_at{};
};

// The scopes of one destination's path, outermost first: each scope's budget name, key and
// effective budget (what Scheduler::EffectiveBudget answers for it).
struct PathScopes {
  struct Scope {
    BudgetName name = BudgetName::kTenantEgress;
    ScopeKey key = 0;
    Budget budget;
  };
  std::array<Scope, kMaxScopes> scopes{};
  uint8_t size = 0;
};

// What the Scheduler knows of one destination (GET /v1/destinations).
struct DestinationView {
  bool has_head = false;
  Priority head_priority = Priority::kNormal;  // the head's, when has_head
  // The most deliveries a second its path lets through: its slowest meter as it paces (the
  // margin, learned and lowered limits, a bulk head's share), at the head's cost. What other
  // destinations take of a shared scope is not in it (docs/api.md, "Drain ETA").
  std::optional<double> foreseen_per_s;
  int in_flight = 0;
  // Why its head is not leaving and until when; kNone when it is due or has no head.
  Deferral deferral;
  bool disabled = false;
  std::string disabled_reason;
  bool paused = false;  // Pause(): an operator holds it
  // Its origin's requests on a connection and the most it may have (connections, or HTTP/2
  // streams), and its requests dispatched and waiting for one (StartSend); 0, 0 and 0 when no
  // connection limit applies.
  int64_t origin_in_flight = 0;
  int64_t origin_kept = 0;  // connections held idle for a tenant's next request (connection_keep)
  int64_t origin_capacity = 0;
  int64_t origin_waiting = 0;
  // The destination's own scope (the last of its path): its budget, whether response headers
  // taught it, and the units it could take now.
  BudgetName budget_name = BudgetName::kTenantEgress;
  Budget budget;
  bool budget_learned = false;
  int64_t remaining = 0;
  // The budget of the destination's own key while header-less 429s hold it below its configured
  // (or learned) one (docs/pacing.md "Adaptive pace"); nullopt at full pace. `adaptive_probing`:
  // a step up is being tried (no whole window has passed at that limit yet).
  std::optional<Budget> adaptive;
  bool adaptive_probing = false;
  // The destination's own key paces to the window its response headers stated
  // (X-RateLimit-Limit / -Remaining / -Reset-After): bursts up to the stated remaining.
  bool stated_window = false;
  // Other destinations share its own key (the users of a LINE channel token): it drains at its
  // share of that key's pace.
  bool key_shared = false;
};

// The pacing engine: decides, for the head of every destination, whether it may go now or must
// wait, until when and why. Pure logic over the injected clock; it never sleeps or owns a timer:
// the service arms one timer for Decision::wake_at.
//
// Protocol: AddDestination() once per destination; Offer() its head (the earliest undelivered
// delivery) whenever it has none; call Next() until it returns kWait or kIdle; after each
// kDispatch, Offer() that destination's next head; report the response with Observe() (headers)
// and OnOutcome() (which returns the Verdict to persist; a deferred delivery is offered again with
// not_before = Verdict::next_attempt when it is the head).
//
// Destinations waiting on time sit in a min-heap by next-eligible time; destinations waiting for
// a shared scope (tenant egress, a token) in that scope's FIFO, released as it refills; due ones
// in their tenant's FIFO (one per platform), served by deficit round robin weighted by cost and
// tenant weight. A platform at its in-flight cap leaves its destinations in those FIFOs, so the
// freed slots go round the tenants too. Idle destinations are never scanned; each decision is
// O(log n) plus O(tenants) when every platform with due work is at its cap.
//
// All methods run on the dispatcher loop. `clock`, `store` and `random` must outlive the
// Scheduler. Errors: kNotFound for an unknown DestinationId, kInvalidArgument for bad input,
// kFailedPrecondition for calls out of protocol; the state is unchanged then.
class Scheduler {
 public:
  Scheduler(const Clock& clock, BudgetStore& store, Random& random, SchedulerOptions options);

  // Registers a destination and builds its scope path. kInvalidArgument for a bad spec.
  Result<DestinationId> AddDestination(const DestinationSpec& spec);
  // Forgets a destination; kFailedPrecondition while it has a head or deliveries in flight.
  Status RemoveDestination(DestinationId id);

  // Hands the destination's head to the Scheduler. An item earlier (by sequence) than the current
  // head replaces it (the replaced one stays in the store and is offered again later);
  // kAlreadyExists when a head with an equal or earlier sequence is held.
  Status Offer(DestinationId id, WorkItem&& item);
  // Drops the head (the delivery was cancelled). No-op without a head.
  Status Withdraw(DestinationId id);

  // The next decision at the clock's now. kDispatch takes the head out of the Scheduler and
  // counts one delivery in flight until OnOutcome().
  Decision Next();

  // Folds what a response taught into the destination's scopes (parks, learned limits, Discord
  // buckets). Call before OnOutcome() for the same response.
  Status Observe(DestinationId id, const RateLimitObservation& observation);

  // Ends the in-flight delivery `sequence` of `id` and plans what happens to it. A 429 or
  // throttle also parks the key its platform's Retry-After covers. A 429 or throttle with neither
  // a Retry-After nor rate-limit headers (in the outcome or the Observe() just before) also
  // lowers the pace of the destination's own key, and parks with a growing, jittered wait
  // (SchedulerOptions::adaptive); deliveries probe the pace back up.
  Result<Verdict> OnOutcome(DestinationId id, uint64_t sequence, const DeliveryOutcome& outcome,
                            const AttemptInfo& info);

  // A disabled destination keeps its head, deferred with destination_disabled and `reason`,
  // until Enable().
  Status Disable(DestinationId id, std::string reason);
  Status Enable(DestinationId id);
  // An operator's pause (docs/api.md, "Pauses"): the destination keeps its head, deferred with
  // reason paused and detail `why` (the WaitObserver is told, with no end time), sends nothing
  // new until Resume(), and its deliveries in flight finish as they would. Independent of
  // Disable(): a destination both disabled and paused waits for both Enable() and Resume().
  // Pausing a paused one replaces `why`.
  Status Pause(DestinationId id, std::string why);
  Status Resume(DestinationId id);

  // Replaces the tenant's operator overrides (see BudgetTable::SetOverrides); applies at once
  // to every scope not governed by learned limits.
  Status SetTenantBudgets(const std::string& tenant,
                          const std::vector<std::pair<BudgetName, Budget>>& overrides);
  // Replaces the tenant's shadow budgets (docs/api.md, "Shadow limits"; Envoy ratelimit's
  // shadow_mode): each is metered on the tenant's scopes of that budget as if it were in force
  // (a meter per scope key, beside the real one), but holds nothing back; every dispatch through
  // such a scope tells the ShadowObserver whether the shadow budget would have let it go. A
  // dispatch it would have refused does not take from the shadow meter (as a refused one would
  // not have been sent then), so the share refused is the share that budget would have deferred.
  // kInvalidArgument for an invalid budget; nothing changes then. Empty: none.
  Status SetTenantShadowBudgets(const std::string& tenant,
                                const std::vector<std::pair<BudgetName, Budget>>& shadow);
  using ShadowObserver = std::function<void(DestinationId, BudgetName, bool throttled)>;
  // Runs inside Next(); it must not call back into the Scheduler.
  void SetShadowObserver(ShadowObserver observer) { shadow_observer_ = std::move(observer); }
  // The tenant's share in deficit round robin. Default: 1. kInvalidArgument for 0.
  Status SetTenantWeight(const std::string& tenant, uint32_t weight);
  // The most deliveries the tenant may have in flight on one platform; 0 for the default, a fair
  // share: the platform's cap divided by the number of tenants with deliveries in flight or due
  // on it (this one included), rounded up. Heads beyond it wait with reason tenant_concurrency.
  // kInvalidArgument for a negative value.
  Status SetTenantMaxInFlight(const std::string& tenant, int max_in_flight);
  // The destination's origin answered over HTTP/2: its connections carry streams from now on.
  Status SetMultiplexed(DestinationId id);
  // The send gate of the connection budget (ConnectionBudget::StartSend): a dispatched request
  // of destination `id` is ready to go. True: it holds a connection of its origin now, until
  // EndSend(id). False: it waits for one; `token` comes out of TakeSendGrants() when one is held
  // for it (the caller keeps the request until then); a tenant's waiting requests get its
  // connections most urgent first (the request's `priority`). An unknown `id` or one without an
  // origin limit always goes.
  bool StartSend(DestinationId id, uint64_t token, Priority priority = Priority::kNormal);
  // A request of `id` that StartSend() (or a grant) let go got its answer or failed: its
  // connection goes to the next waiting request of the origin at once, or stays its tenant's for
  // the destination's next head (SchedulerOptions::connection_keep). Call before OnOutcome().
  void EndSend(DestinationId id);
  // The tokens granted a connection since the last call, in order: send them now. Call after
  // EndSend() and after Next() (which gives back kept connections whose time is up).
  std::vector<uint64_t> TakeSendGrants();
  // Replaces the deployment default of one budget (from the config); call before any
  // destination is added. kInvalidArgument for a non-positive field.
  Status SetDefaultBudget(BudgetName name, const Budget& budget) {
    return budgets_.SetDefault(name, budget);
  }
  // Replaces the deployment defaults of the listed budgets at run time (a config reload) and
  // applies them at once, as SetTenantBudgets does, to every scope of every tenant without an
  // override not governed by learned limits. kInvalidArgument, naming the budget, for a
  // non-positive field; nothing changes then.
  Status SetDefaultBudgets(const std::vector<std::pair<BudgetName, Budget>>& defaults);

  // Shares what responses teach (learned limits and bursts, stated windows, adaptive paces,
  // Discord bucket ids) with the other nodes through `share` (nullptr: none; must outlive the
  // Scheduler). Each change of a destination's own key is published once.
  void SetLearnedShare(LearnedShare* share) { share_ = share; }
  // Applies what another node learned `age` ago: to the key at once when a destination here
  // uses it, and to a destination added later (its key new here) within kSharedLearnedTtl of
  // the update. A key that is not a destination's own key (the only ones learning changes) is
  // ignored, and so is an update older than kSharedLearnedTtl. kInvalidArgument for a budget out
  // of range, a negative age or an unknown kind; kBusy when kMaxSharedLearned keys are already
  // held for later (a key in use here has taken the update all the same).
  Status ApplyLearned(const LearnedUpdate& update, Millis age = Millis(0));
  static constexpr size_t kMaxSharedLearned = 65'536;
  static constexpr Millis kSharedLearnedTtl = kLearnedTtl;

  Result<DestinationView> Inspect(DestinationId id) const;
  // The effective budget of scope `budget` on the destination's path; kNotFound if not on it.
  Result<Budget> EffectiveBudget(DestinationId id, BudgetName budget) const;

  // When a dispatched request of `id` (`cost` units), which the meters let go at `let_go`, may
  // leave: now or later. A platform counts a send when it arrives, and the meters count it when
  // they let it go: one that left late (a slow lease write, a wait for a connection or an
  // access token) and the next that leaves on time would arrive closer than the meters spaced
  // them (on a 1/s channel, 0.95 s apart after one that left 100 ms late: a 429). So a send
  // leaves at least as long after the last one of its destination's own key (its leaf) as the
  // meters let the two go apart (either way round), up to the budget's own interval per unit
  // of that last one (without the pacing margin, which is the room lateness has); one that
  // would leave earlier is held until then. Sends that are all late alike are not held. Not
  // for a key whose window the platform states (its headers count for it). Counts the send as
  // leaving at the time returned.
  SteadyTime DepartAt(DestinationId id, SteadyTime let_go, int64_t cost = 1);

  // Every scope on the destination's path (no allocation); kNotFound for an unknown id.
  Result<PathScopes> ScopesOf(DestinationId id) const;
  // Drops meter state that equals a fresh key's; call now and then (e.g. once a minute).
  size_t Sweep();

  // Told whenever a head is held back by pacing (a budget, a park from Retry-After or
  // remaining 0): which destination, why and until when. Not for concurrency caps, ordering or
  // disabled destinations. May be called again for the same head on re-evaluation. Runs inside
  // Next(); it must not call back into the Scheduler.
  using WaitObserver = std::function<void(DestinationId, const Deferral&)>;
  void SetWaitObserver(WaitObserver observer) { wait_observer_ = std::move(observer); }

  size_t destination_count() const { return live_count_; }
  size_t scope_count() const { return scopes_.size(); }

 private:
  enum class State : uint8_t {
    kEmpty,      // no head, in no structure
    kReady,      // in its tenant's FIFO
    kTimer,      // in the heap under `generation`
    kScopeWait,  // in a scope's FIFO
    kBlocked,    // waits for an outcome (concurrency or ordering)
    kConnWait,   // waits for a connection of its origin (ConnectionBudget)
    kDisabled,   // waits for Enable() or Resume()
  };

  // 104 bytes (96 before paths held six scopes): this and its heap entry are most of what an
  // idle destination costs.
  struct Dest {
    PackedId head_id;  // the text is in long_ids_ when head_form is kLong
    uint64_t head_sequence = 0;
    int64_t head_not_before_ns = 0;
    int64_t until_ns = 0;  // while kTimer or kScopeWait: the wake-up
    std::array<uint32_t, kMaxScopes> scopes{};
    uint32_t tenant = 0;
    uint32_t generation = 0;
    uint32_t link = ScopeTable::kNil;  // next in whichever FIFO holds it
    uint32_t head_cost = 1;
    uint32_t origin = ConnectionBudget::kNoOrigin;
    // 32-bit hash of the ordering key, 0 for none. Two keys of one destination that collide
    // are serialized together: stricter, never looser.
    uint32_t head_ordering = 0;
    uint16_t in_flight = 0;
    uint8_t scope_count = 0;
    uint8_t credential_index = 0;
    uint8_t retry_after_index = 0;
    uint8_t leaf_index = 0;
    // Which scope of the path (index) just released it from its wait FIFO, kNotReleased else:
    // such a head goes before the newer ones and keeps its place if that scope holds it again.
    uint8_t released_index = kNotReleased;
    Platform platform = Platform::kWebhook;
    State state = State::kEmpty;
    DeferReason reason = DeferReason::kNone;
    DeferReason head_wait_reason = DeferReason::kScheduled;
    BudgetName reason_budget = BudgetName::kTenantEgress;
    uint8_t head_form : 2 = 0;      // IdForm
    uint8_t head_priority : 2 = 1;  // Priority
    bool has_head : 1 = false;
    bool disabled : 1 = false;
    bool paused : 1 = false;
    bool live : 1 = false;
    // The last Observe() carried rate-limit headers; read and cleared by OnOutcome().
    bool headers_seen : 1 = false;
    // A connection of its origin is reserved for it (ConnectionBudget grant).
    bool conn_grant : 1 = false;
    // It gave a grant back because a meter held it: it waits first for the next connection.
    bool conn_first : 1 = false;
    // ScopePath::shared_shape and park_leaf_with_room.
    bool shared_shape : 1 = false;
    bool park_leaf_with_room : 1 = false;
    // It holds its siblings' burst probe (SiblingShape::probe).
    bool shape_probe : 1 = false;
    // ScopePath::startup_window.
    bool startup_window : 1 = false;
  };
  static_assert(sizeof(Dest) <= 104);

  struct Tenant {
    std::string name;
    // One per platform, so a full platform blocks only that platform's destinations; by
    // priority within.
    std::array<WaitLanes, kMaxPlatforms> ready;
    uint32_t ready_mask = 0;  // bit p: ready[p] holds a head
    static_assert(kMaxPlatforms <= 32, "ready_mask holds a bit per platform");
    uint8_t next_platform = 0;
    int64_t deficit = 0;
    uint32_t weight = 1;
    int max_in_flight = 0;  // 0: the fair share
    std::array<int, kMaxPlatforms> in_flight{};
    bool in_ring = false;
    bool turn = false;
  };

  // Ordering keys of one destination held by a delivery in flight or awaiting its retry.
  struct HeldKey {
    uint32_t ordering = 0;
    uint64_t sequence = 0;
    bool retrying = false;
  };

  struct DiscordKeys {
    ScopeKey route = 0;
    ScopeKey major = 0;
    uint64_t epoch = 0;
  };

  static constexpr uint32_t kScopeTimerBit = 0x80000000u;
  static constexpr uint8_t kNotReleased = 0xFF;

  Result<Dest*> Find(DestinationId id);
  Result<const Dest*> Find(DestinationId id) const;
  uint32_t TenantIndex(const std::string& name);

  // In `d`'s lane (its head's priority): at the back, or at the front (its turn came).
  void PushBack(WaitLanes& lanes, uint32_t d);
  void PushFront(WaitLanes& lanes, uint32_t d);
  // The front of the most urgent lane with a waiter; the lanes must not be empty.
  uint32_t PopFront(WaitLanes& lanes);
  // Takes `d` out of its lane (its head_priority's) of `lanes`; false when it is not there.
  // O(the lane's length): only for a head whose priority changes while it waits.
  bool Unlink(WaitLanes& lanes, uint32_t d);
  // `d` waits (ready, or in a scope's list) and its head's priority becomes `priority`: it
  // moves to the back of that lane.
  void Relane(uint32_t d, uint8_t priority);

  void MakeReady(uint32_t d);
  // The platform whose ready FIFO `tenant` serves next: -1 when all are empty, -2 when every
  // non-empty one is at its platform's or the tenant's in-flight cap.
  int PickPlatform(Tenant& tenant);
  void ArmTimer(uint32_t d, int64_t at_ns, DeferReason reason);
  // After the budget of `scope` was set, `before` being the old one: when it changed, rescales
  // its meter (BudgetStore::Rescale), has its waiters looked at again at once and returns true.
  bool RepaceScope(uint32_t scope, const GcraParams& before, SteadyTime now);
  // Sets every live scope of `tenant` (all tenants when nullopt) to its effective budget and
  // looks at the work its new pace frees at once.
  void ApplyBudgets(std::optional<uint32_t> tenant);
  void ArmScope(uint32_t scope, int64_t at_ns);
  void FireTimers(int64_t now_ns);
  void ReleaseScopeWaiters(uint32_t scope, int64_t now_ns);
  std::optional<int64_t> EarliestTimer();

  // Takes `d` (popped from its FIFO) and either dispatches its head into `decision` (true) or
  // moves it to the structure it must wait in (false).
  bool Evaluate(uint32_t d, int64_t now_ns, Decision& decision);
  // Evaluate() without the grant's bookkeeping; `granted`: a connection is reserved for it.
  bool EvaluateHead(uint32_t d, int64_t now_ns, Decision& decision, bool granted);
  bool OrderingHeld(uint32_t d) const;
  // A bulk head's TakeAll: its path's charges and a share meter for every scope other
  // destinations use (SchedulerOptions::bulk_share). A share's denial names path.size() + the
  // index of its scope.
  Result<TakeResult> TakeWithShare(const Dest& dest, std::span<const Charge> path, int64_t now_ns);
  // Whether other destinations use `scope` too (a LINE channel is the leaf of its users): bulk
  // heads take their share of such scopes.
  bool Shared(uint32_t scope) const { return scopes_.at(scope).refs > 1; }
  // The bulk share meter of `scope` whose own meter paces with `params`.
  GcraParams ShareParams(uint32_t scope, const GcraParams& params) const;
  // Defers `d` on the scope that denied; `released`: the path index of the scope that released
  // it from its FIFO for this evaluation (it goes back to that FIFO's front, not its back).
  // `bulk_share`: the scope's bulk meter denied (SchedulerOptions::bulk_share).
  void Deny(uint32_t d, const TakeResult& result, int64_t now_ns, uint8_t released = kNotReleased,
            bool bulk_share = false);
  void DispatchHead(uint32_t d, Decision& decision);
  // Makes ready the destinations the connection budget granted a connection.
  void ApplyGrants();
  // Gives back the connections kept past their time (EndSend, ConnectionBudget::Keep).
  void ExpireKept(int64_t now_ns);
  int TenantCap(const Tenant& tenant, int platform) const;
  void ClearHeadId(uint32_t d);
  // Meters a dispatch of `d` against its tenant's shadow budgets (SetTenantShadowBudgets).
  void MeterShadow(uint32_t d, int64_t now_ns);
  // After a destination's disabled or paused flag changed: holds its head (kDisabled) while
  // either is set, with the reason that holds it, and lets it go to its FIFO once neither is.
  void Rehold(uint32_t d);
  // Tells the WaitObserver that `d`'s head is held by a pause.
  void TellPaused(uint32_t d);
  void RekeyDiscord(uint32_t d);
  void ReleaseOrdering(uint32_t d, uint64_t sequence, bool retrying);
  void ParkScope(const Dest& dest, uint8_t index, Millis wait, ParkKind kind);
  Verdict ApplyRetryBudget(Verdict verdict, SteadyTime now);
  // Adaptive pace (AIMD) of the destination's own key: a header-less throttle lowers it and parks
  // the Retry-After key (once per park: 429s of requests sent before it teach nothing new); a
  // delivery probes it back up. Returns the verdict with next_attempt no earlier than the park.
  Verdict AdaptToThrottle(const Dest& dest, uint32_t d, uint64_t sequence, Verdict verdict,
                          Millis throttle_wait);
  // Returns whether the key's meter was repaced (its limit changed): a head waiting on its own
  // timer for the old pace must be looked at again.
  bool AdaptToSuccess(const Dest& dest, uint32_t d, uint64_t sequence);
  // A failed step's canary (AdaptivePace::WantsCanary): a dispatch of `d` becomes it, and its
  // leaf (the adaptive key) parks behind it; an answer that is neither a delivery nor a
  // header-less 429 lets the next request be the canary.
  void DispatchCanary(const Dest& dest, uint32_t d);
  void CanaryLost(const Dest& dest, uint32_t d, uint64_t sequence);
  // The sends and deliveries of the destination's own key in its last window, for the keys that
  // are counted (LINE channels, which never send rate-limit headers, and keys whose pace was
  // lowered); `sent` < 0 for the others.
  RecentWindow Recent(ScopeKey key, int64_t now_ns) const;
  void CountRecent(const Dest& dest, bool delivered, int64_t now_ns);
  // A 429 with Retry-After on a key whose burst is above 1: that burst was more than the
  // platform's, so the key's burst drops by one and its meter is emptied (Slack channels).
  // The leaf's burst drops to `burst` (by default one less than it is) and its meter empties.
  void LearnBurst(const Dest& dest, int64_t burst = 0);
  // Siblings (scheduler_siblings.cc). The shape of the leaves under one credential scope whose
  // path says they share it (ScopePath::shared_shape): the burst one of them learned, the
  // largest level any was accepted at, and the one sibling trying the next level.
  struct SiblingShape {
    int64_t learned_burst = 0;  // 0: none learned
    int64_t confirmed = 1;
    uint32_t probe = ScopeTable::kNil;
    int64_t probe_level = 0;
    int64_t probe_until_ns = 0;
    // Held back to `confirmed` while another sibling probes; woken when it ends.
    std::vector<uint32_t> waiting;
  };
  ScopeKey SiblingKey(const Dest& dest) const;
  // The burst the destination's siblings learned, 0 for none.
  int64_t SiblingBurst(const Dest& dest) const;
  SiblingShape& ShapeOf(const Dest& dest);
  // Before a head's meters are taken: the leaf's depth held to what its siblings know. Returns
  // the shape when a level above it is still to be tried (`probe_depth`: the next one), else
  // nullptr.
  SiblingShape* HoldToSiblings(const Dest& dest, Charge& leaf, int64_t& probe_depth);
  // The head held to its siblings' level was denied by its leaf: tries `probe_depth` when no
  // other sibling is probing (`taken` becomes that answer; the head holds the probe when it
  // passed), else the head is woken when that probe ends.
  void ProbeSiblings(uint32_t d, SiblingShape& shape, std::span<Charge> charges,
                     int64_t probe_depth, int64_t now_ns, TakeResult& taken);
  // An outcome of the head that probed: accepted confirms its level, a 429 teaches every
  // sibling the burst below it, anything else ends the probe without a lesson.
  void EndShapeProbe(uint32_t d, bool accepted, bool throttled);
  void WakeSiblings(SiblingShape& shape);
  // The startup window of a header-less leaf (scheduler_startup.cc): like TCP's slow start,
  // one request more in flight than the key has had accepted, at most four, until its first
  // 429 (or 64 accepted): the first answers teach the adaptive pace before a whole round trip's
  // worth of requests at the configured ceiling draws a 429 each.
  struct StartupWindow {
    int64_t in_flight = 0;
    int64_t allowed = 1;
    int64_t accepted = 0;
    bool done = false;
    std::vector<uint32_t> waiting;
  };
  // False (the head waits) when the window is full.
  bool StartupAllows(uint32_t d);
  void StartupSent(const Dest& dest);
  void StartupAnswered(const Dest& dest, bool accepted, bool throttled);
  // Which scope a Retry-After parks: retry_after_index, or the leaf while that scope's meter
  // has room (ScopePath::park_leaf_with_room).
  uint8_t ParkIndex(const Dest& dest);
  // Observe() of a response that states the key's window (limit, remaining, reset after): the
  // key bursts up to the stated remaining; a response without them returns it to burst 1.
  void FollowStatedWindow(Dest& dest, const RateLimitObservation& observation);
  // The budget a scope's meter paces to: `budget`, with the burst raised to the limit for a
  // Discord global key counted in a window (Windowed()).
  Budget Shape(BudgetName name, Budget budget) const;
  bool Windowed(uint32_t scope) const;
  // Only Discord's global key and a profile platform's window scopes are counted in windows.
  static bool MayBeWindowed(Platform platform) {
    return platform == Platform::kDiscord || static_cast<int>(platform) >= kBuiltinPlatformCount;
  }
  // Publishes the state of a destination's own key (share_): its adaptive pace, its learned
  // budget, or kForget when it is back at the configured one.
  void ShareLeaf(uint32_t leaf);
  // Applies a shared update to a scope in use here.
  void AdoptShared(uint32_t scope, const LearnedUpdate& update, int64_t now_ns);
  // A destination's own key just acquired: takes what another node learned about it, if any.
  void AdoptPendingShared(uint32_t scope);
  // Drops one reference to a scope; forgets its adaptive pace with the last one.
  void ReleaseScope(uint32_t scope);

  const Clock& clock_;
  BudgetStore& store_;
  Random& random_;
  SchedulerOptions options_;
  BudgetTable budgets_;
  ScopeTable scopes_;
  TimerHeap timers_;
  ChunkedVector<Dest> dests_;
  std::vector<uint32_t> free_dests_;
  size_t live_count_ = 0;
  std::vector<Tenant> tenants_;
  std::unordered_map<std::string, uint32_t> tenant_index_;
  std::deque<uint32_t> ring_;
  std::array<int, kMaxPlatforms> platform_in_flight_{};
  // Per platform: the tenants with deliveries in flight or heads in their ready FIFO.
  std::array<int, kMaxPlatforms> platform_tenants_{};
  ConnectionBudget conns_;
  // Connections a tenant keeps at an origin for its next request, until `until_ns`.
  struct KeptConnection {
    uint32_t origin = 0;
    uint32_t tenant = 0;
    int64_t until_ns = 0;
  };
  std::vector<KeptConnection> kept_;
  std::unordered_map<uint32_t, std::vector<HeldKey>> held_;
  std::unordered_map<uint32_t, std::string> disabled_reasons_;
  std::unordered_map<uint32_t, std::string> paused_reasons_;  // Pause()'s `why`
  std::unordered_map<uint32_t, std::string> long_ids_;  // heads whose id packs in no other form
  std::unordered_map<uint32_t, DiscordKeys> discord_;
  std::unordered_map<ScopeKey, ScopeKey> discord_buckets_;  // route hash → bucket hash
  uint64_t discord_epoch_ = 0;
  // Keys whose pace header-less 429s lowered, by scope key; empty while every key is at full pace.
  std::unordered_map<ScopeKey, AdaptivePace> adaptive_;
  // Two-bucket sliding counts of sends and deliveries per counted key (see Recent()).
  struct RecentCounts {
    int64_t start_ns = 0;  // of the current bucket
    int64_t window_ns = 1;
    int64_t since_ns = 0;  // counted without a gap of two windows since
    int32_t sent = 0;
    int32_t sent_before = 0;
    int32_t delivered = 0;
    int32_t delivered_before = 0;
  };
  std::unordered_map<ScopeKey, RecentCounts> recent_;
  // Keys pacing to a window their headers stated (their budget's burst is the stated limit).
  std::unordered_map<ScopeKey, Budget> stated_;
  std::unordered_map<ScopeKey, SiblingShape> shapes_;    // by SiblingKey
  std::unordered_map<ScopeKey, StartupWindow> startup_;  // by leaf key
  // The sends of Discord global keys in their last window (Windowed() scopes), by scope key.
  std::unordered_map<ScopeKey, SlidingWindow> windows_;
  // The budgets a profile platform counts in windows (ScopeRule::window), by BudgetName.
  std::array<bool, kMaxBudgetNames> windowed_names_{};
  int64_t retry_tat_ns_ = 0;
  WaitObserver wait_observer_;
  // Shadow budgets by tenant index, and the shadow meters' stored times by scope key (a fresh
  // key is 0; Sweep drops the ones back at fresh).
  std::unordered_map<uint32_t, std::vector<std::pair<BudgetName, GcraParams>>> shadow_;
  std::unordered_map<ScopeKey, int64_t> shadow_tat_;
  // Each leaf's last departure (DepartAt), by scope key: when the meters let it go, when it
  // left, and until when it holds the next back (its units' intervals after it left; Sweep
  // drops it after that).
  struct Departure {
    int64_t let_go_ns = 0;
    int64_t left_ns = 0;
    int64_t until_ns = 0;
  };
  std::unordered_map<ScopeKey, Departure> departed_;
  ShadowObserver shadow_observer_;
  LearnedShare* share_ = nullptr;
  // What other nodes learned, by scope key, for destinations added here later.
  struct SharedLearned {
    LearnedUpdate update;
    int64_t received_ns = 0;
  };
  std::unordered_map<ScopeKey, SharedLearned> shared_learned_;
};

}  // namespace egress::pacing
