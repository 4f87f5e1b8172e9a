#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/invalid_request_counter.h"
#include "adapters/platform_adapter.h"
#include "adapters/redis_invalid_requests.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/packed_id.h"
#include "dispatcher/pacing/scheduler.h"
#include "dispatcher/service/credential_book.h"
#include "dispatcher/service/delivery/access_tokens.h"
#include "dispatcher/service/delivery/budget_use.h"
#include "dispatcher/service/delivery/destination_index.h"
#include "dispatcher/service/delivery/destination_queue.h"
#include "dispatcher/service/delivery/drain_estimate.h"
#include "dispatcher/service/delivery/store_writer.h"
#include "dispatcher/service/metrics.h"
#include "dispatcher/service/pause_book.h"
#include "storage/queue_store.h"

namespace egress::service {

// Finds the adapter of a platform ("slack", ...); InvalidArgument for an unknown one.
using AdapterLookup =
    std::function<Result<const adapters::PlatformAdapter*>(std::string_view platform)>;

// A page of GET /v1/destinations (docs/api.md, "Destinations"): which destinations, in which
// order, from where, and how far to look.
struct DestinationQuery {
  std::string tenant;              // empty: every tenant
  std::string platform;            // empty: every platform
  std::string destination_prefix;  // of the destination as shown (redacted), so nothing secret
                                   // can be guessed from what matches
  std::string deferral_prefix;     // of the deferral reason ("budget", "retry_after:...")
  std::optional<bool> disabled;
  bool by_oldest_deferral = false;  // else by key (a stable walk)
  std::optional<DestinationPosition> after;
  size_t limit = 100;
  // The most destinations looked at for one page: a page that meets it before `limit` match
  // ends early with a position to go on from, so no page costs more than this.
  size_t max_scan = 10'000;
};

// What GET /v1/destinations shows of one destination.
struct DestinationInfo {
  std::string platform, tenant, credential, destination;
  pacing::DestinationView view;
  std::vector<std::pair<std::string, std::string>> last_headers;
  int64_t last_response_ms = 0;
  // When the oldest deferred delivery the loop holds (head and read-ahead) was deferred
  // (Unix ms, 0: none).
  int64_t oldest_deferral_ms = 0;
  std::string pause_id;  // the pause holding it; empty when none
  // Its dispatches metered by a shadow limit, and those it would have throttled.
  uint64_t shadow_checked = 0;
  uint64_t shadow_throttled = 0;
  // Deliveries per second that left its backlog (delivered or dead) over the last few seconds
  // (DrainRate); nullopt without any lately.
  std::optional<double> drained_per_s;
};

struct DestinationPage {
  std::vector<DestinationInfo> items;
  std::optional<DestinationPosition> next;  // where the next page starts; none: the end
  size_t scanned = 0;                       // destinations looked at
};

// Moves deliveries from the store to the platforms: keeps one head per destination with work in
// the Scheduler, asks it what may go, leases the delivery, sends it through its adapter and the
// transport, folds the response into the Scheduler and persists the verdict.
//
// The head of a destination is its earliest delivery that is not in flight (store order), so a
// deferred delivery holds those behind it until its next attempt: order is kept and a parked
// destination stays parked. Each destination reads a bounded number of waiting deliveries ahead
// (DestinationQueue), so the next head is at hand when one leaves: memory grows with
// destinations that have work, not with deliveries. Leases and outcomes are written in group
// commits (StoreWriter): one write, and for outcomes one fsync, for all that finished together.
//
// Store faults (docs/storage.md, "Faults"): an outcome whose write fails is written again after
// a back-off until it lands; meanwhile the delivery stays leased (in flight), so it is not sent
// again (a restart before the write lands finds it waiting: at-least-once). A lease or a read
// that fails for a passing reason pauses dispatching for a back-off, then the read is retried;
// the delivery was not sent and is leased again later. While the owner says the store cannot
// write (SetStoreWritable), nothing is dispatched. A record the store cannot read is moved to
// dead (QueueStore::MoveCorruptToDead) and its destination goes on; a delivery whose request
// cannot be built (InvalidArgument from the adapter) is dead with reason
// "invalid_payload: <why>".
//
// All methods run on the loop (`io`). Store calls run on `storage` and post back: the service
// passes its one-thread store pool; a test may pass the loop's own executor, so store calls run
// in turn on the loop. The wake-up timer waits for the Scheduler's wait as a duration measured
// from `clock`, so the loop follows whichever clock it is given. Everything passed in must
// outlive the DeliveryLoop; Service destroys it after the loop has stopped.
class DeliveryLoop {
 public:
  struct Options {
    // Deliveries one store read fetches per destination. Default: 32.
    size_t read_ahead = 32;
    // Deliveries held in memory across every destination (heads and read-ahead, about 170
    // bytes each; docs/storage.md, "Memory"): each destination may hold this divided by the
    // destinations known, at least 1 (its head) and at most twice read_ahead; the rest stays in
    // the store until its turn comes. 0: no budget. Default: 100,000 (about 17 MiB; up to
    // 50,000 destinations hold two or more each, past that one each).
    size_t held_budget = 100'000;
    // Discord's invalid-request guard (401, 403, 429 per bot token in 10 minutes).
    adapters::InvalidRequestCounter::Options discord_invalid_requests;
    // A head held back by pacing for at least this long is written to the store as deferred,
    // with the reason and the next eligible time, so the record says why it waits. Shorter
    // waits (routine pacing) are only counted. Default: 5 s.
    Millis persist_wait{5000};
    // A destination with nothing held, in flight or being written for this long is forgotten
    // (EvictIdle): its entry here and in the Scheduler with the meters it learned, so memory
    // follows the destinations in use, not every one ever seen. A disabled one is kept (it holds
    // its head). Default: 10 min.
    Millis destination_idle{600'000};
    // Back-off after a failed store write or read, doubling per failure in a row. Default:
    // 200 ms up to 5 s.
    Millis first_store_retry{200};
    Millis max_store_retry{5000};
    // Outcomes (StoreWriter's linger): a write of fewer than outcome_linger_batch outcomes waits
    // up to outcome_linger for more. The next delivery of a destination does not wait for its
    // predecessor's outcome to be written, so this delays only when an outcome is durable.
    // Default: none. Service sets it for a PostgreSQL store, whose transactions cost much more
    // than their rows.
    Millis outcome_linger{0};
    size_t outcome_linger_batch = 0;
    // Each platform's API root (slack, discord, line, a profile platform's): a destination that is
    // no URL of its own sends to this origin, which its connections are counted against
    // (pacing::DestinationSpec::origin). Empty: no connection limit for that platform's
    // destinations unless the destination is a URL. Service sets them from its endpoints.
    std::array<std::string, kMaxPlatforms> base_urls;
  };

  DeliveryLoop(boost::asio::io_context& io, boost::asio::any_io_executor storage,
               storage::QueueStore& store, pacing::Scheduler& scheduler,
               adapters::HttpTransport& transport, AdapterLookup adapters,
               const CredentialBook& credentials, const Clock& clock, Metrics& metrics,
               Options options);
  DeliveryLoop(boost::asio::io_context& io, boost::asio::any_io_executor storage,
               storage::QueueStore& store, pacing::Scheduler& scheduler,
               adapters::HttpTransport& transport, AdapterLookup adapters,
               const CredentialBook& credentials, const Clock& clock, Metrics& metrics)
      : DeliveryLoop(io, std::move(storage), store, scheduler, transport, std::move(adapters),
                     credentials, clock, metrics, Options{}) {}

  ~DeliveryLoop();
  DeliveryLoop(const DeliveryLoop&) = delete;
  DeliveryLoop& operator=(const DeliveryLoop&) = delete;

  // Loads every destination with work from the store and starts pacing.
  void Start();
  // The shards this node may dispatch changed (a store several nodes serve: the store's
  // ShardOwnership): forgets the destinations of shards it no longer dispatches (their heads
  // withdrawn; one with work in flight once that work is written) and loads those of the
  // shards it gained. Nothing to do for a store of one node.
  void OwnershipChanged();
  // Deliveries made waiting through another node (ShardOwnership's wake-up): reads each and
  // paces it when its shard is this node's.
  void Wake(std::vector<std::string> ids);
  // A delivery became durable or was replayed: make sure its destination is paced.
  void Notify(const storage::Delivery& delivery);
  // Stops dispatching; calls `done` once no attempt is in flight and every outcome is written.
  void Drain(std::function<void()> done);
  // Re-enables a disabled destination (by its destination key); false when unknown.
  bool Enable(const std::string& destination_key);
  // The operator's pauses (docs/api.md, "Pauses"), which `pauses` holds (null: none; it must
  // outlive the loop). Call before Start(). Each destination is matched when it is registered,
  // and every one again at PausesChanged().
  void SetPauses(const PauseBook* pauses) { pauses_ = pauses; }
  // The pauses changed: holds each destination a pause now names (Scheduler::Pause: its head
  // waits, deferred with reason paused) and lets go of those none names (in store order, paced
  // as before). O(destinations x pauses) in one turn, when an operator changes a pause.
  void PausesChanged();
  // The Scheduler's budgets changed (an operator override): looks at the waiting work again now
  // rather than at the wake-up the old budgets had set.
  void BudgetsChanged();
  // Whether the store takes writes (the service's health monitor says so). While it does not,
  // nothing is dispatched and failed writes wait; when it does again, they are retried at once.
  // Default: true.
  void SetStoreWritable(bool writable);
  // Looks at the waiting work again now, as the wake-up timer does, and retries a store write
  // whose back-off is over: after a test moved its FakeClock (the timers wait in real time).
  void WakeForTest();

  // Counts Discord's invalid requests of each token with the other nodes' ([cluster]): each one is
  // also added to `shared`, and the cluster's count (InvalidRequestCounter::MergeShared) stops a
  // token that all nodes together brought to the threshold. While Redis is away this node's own
  // count still guards. `shared` (may be null: not shared) must outlive the loop.
  void ShareDiscordInvalidRequests(adapters::RedisInvalidRequests* shared) {
    shared_invalid_ = shared;
  }

  // Forgets the destinations idle for destination_idle (see Options); the maintenance timer
  // calls it every minute. Returns how many it forgot.
  size_t EvictIdle();

  std::vector<DestinationInfo> Destinations() const;
  // One page of the destinations (DestinationIndex): O(query.max_scan + limit), whatever the
  // number of destinations.
  DestinationPage ListDestinations(const DestinationQuery& query) const;
  // The keys of destinations an operator names by the key GET /v1/destinations shows
  // (DestinationKeyText: separators as '/', secrets redacted), looking at those of `tenant`
  // (empty: every tenant) in key order after `after`, at most `max_scan` of them: `next` is where
  // to go on from, none at the end.
  struct ShownKeyMatches {
    std::vector<std::string> keys;
    std::optional<DestinationPosition> next;
  };
  ShownKeyMatches FindByShownKey(std::string_view shown, std::string_view tenant,
                                 const std::optional<DestinationPosition>& after,
                                 size_t max_scan) const;
  // The tenant's destinations with work: O(1).
  size_t DestinationCountOf(const std::string& tenant) const { return index_.CountOf(tenant); }
  uint64_t destination_epoch() const { return index_.epoch(); }
  // The destinations holding a deferred delivery, oldest deferral first (GET /metrics' oldest
  // deferral per tenant and platform, found in steps): calls `visit(tenant, platform,
  // deferral_ms)` for up to `max_steps` of them after `after` (from the start without it);
  // returns where it stopped, nullopt at the end. A destination whose oldest deferral changes
  // between two calls moves in this order, so a walk over several may miss or repeat it.
  using DeferralVisit =
      std::function<void(const std::string& tenant, std::string_view platform, int64_t ms)>;
  std::optional<DestinationPosition> WalkDeferrals(const std::optional<DestinationPosition>& after,
                                                   size_t max_steps,
                                                   const DeferralVisit& visit) const;
  // Deliveries per second of `tenant` on `platform` that left the backlog (delivered or dead)
  // over the last few seconds on this node (DrainRate); nullopt without any lately.
  std::optional<double> DrainedPerSecond(const std::string& tenant,
                                         const std::string& platform) const;
  // Units each dispatched delivery took from the budgets on its path (for /metrics).
  BudgetUse& budget_use() { return budget_use_; }
  size_t destination_count() const { return dests_.size(); }
  size_t in_flight() const { return in_flight_.size(); }
  // Outcomes (and pacing waits) submitted and not yet written, retried ones included.
  size_t outcomes_pending() const { return outcomes_.pending(); }

 private:
  // Its members ordered so the small ones share words: one per destination with work.
  struct Dest {
    pacing::DestinationId id;
    int in_flight = 0;
    int shard = -1;  // ShardOwnership::ShardOf; -1: a store of one node
    bool discord = false;
    bool writing_wait = false;
    // The head the Scheduler holds (`offered`, packed; the text of a kLong one is in
    // long_offered_); kNone when none. A delivery id packs in 16 bytes: a string took 64.
    pacing::IdForm offered_form = pacing::IdForm::kNone;
    const std::string* key = nullptr;  // dests_' key of its node (nodes stay put)
    // Shared by every destination of the name (Intern): "<tenant>/<credential>", the tenant and
    // the platform.
    const std::string* token_key = nullptr;
    const std::string* tenant = nullptr;
    const std::string* platform = nullptr;
    DestinationQueue queue;
    pacing::PackedId offered;
    std::vector<std::pair<std::string, std::string>> last_headers;
    int64_t last_response_ms = 0;
    uint64_t counted_wait = 0;  // hash of the head id and reason of the last pacing wait counted
    SteadyTime last_active{};   // when it was last given, sent or told of work
    uint64_t hash = 0;          // its place in index_
    int64_t indexed_deferral_ms = 0;  // its oldest deferral as index_ has it
    std::string pause_id;             // the pause holding it; empty when none
    uint64_t shadow_checked = 0;      // dispatches a shadow limit metered
    uint64_t shadow_throttled = 0;    // of which it would have throttled
    // Deliveries that left its backlog, lately; made with the first (56 bytes a destination whose
    // work is parked for hours, as 100,000 of a million-delivery backlog were, never uses).
    std::unique_ptr<DrainRate> drained;
    DrainRate* group_drained = nullptr;  // its (tenant, platform)'s, in drain_rates_
  };
  struct InFlight {
    std::string dest_key;
    uint64_t sequence = 0;
    // When the Scheduler let it go (Scheduler::DepartAt).
    SteadyTime let_go;
    // The OAuth2 access token its request carried (AccessTokens), if any.
    std::string access_token;
  };
  // A request held until its key's meter of departures lets it leave (Scheduler::DepartAt).
  struct HeldSend {
    adapters::HttpRequest request;
    std::string dest_key;
    uint64_t sequence = 0;
    storage::Delivery delivery;
    const adapters::PlatformAdapter* adapter = nullptr;
  };
  // A leased delivery waiting for a connection of its origin.
  struct Parked {
    std::string dest_key;
    uint64_t sequence = 0;
    storage::Delivery delivery;
  };

  Dest* Ensure(const std::string& key);
  // The destination of a Scheduler id, null for none.
  Dest* ById(pacing::DestinationId id) const;
  // The head the Scheduler holds for `dest` (Dest::offered): whether it is `id`, its text, and
  // setting or clearing it.
  bool OfferedIs(const Dest& dest, std::string_view id) const;
  std::string OfferedText(const Dest& dest) const;
  void SetOffered(Dest& dest, const std::string& id);
  void ClearOffered(Dest& dest);
  // The one copy of `name` the destinations point at (tenants, platforms, tenant/credential
  // pairs: what the store holds names, not what clients send; kept for the loop's life).
  const std::string* Intern(std::string name);
  // Whether this node may dispatch the destination's work now (always, for a store of one node).
  bool Owned(const Dest& dest) const;
  // Pages through the destinations with work (the store's ListDestinations: those this node may
  // dispatch), registering and reading each. One walk at a time; asked again while one runs,
  // another follows it.
  void LoadDestinations();
  // Drops a destination that nothing holds (no head offered, nothing in flight or being written
  // or read) from dests_, the index and the Scheduler; false when the Scheduler refuses.
  bool Forget(std::unordered_map<std::string, Dest>::iterator it);
  // A destination this node no longer dispatches: its head withdrawn and its read-ahead
  // dropped; forgotten once nothing of it is in flight.
  void Disown(std::unordered_map<std::string, Dest>::iterator it);
  // Counts `cost` units against every scope on the destination's path (budget_use_).
  void TakeBudgets(const Dest& dest, uint32_t cost);
  void Fetch(Dest& dest);
  void OnFetched(const std::string& key, Result<storage::DestinationWork> work);
  // Offers the destination's head to the Scheduler when it holds another (or none).
  void OfferHead(Dest& dest);
  void SchedulePump();
  void Pump();
  void Dispatch(const pacing::Decision& decision);
  void OnLeased(const std::string& key, uint64_t sequence, const std::string& id,
                Result<storage::Delivery> leased);
  // A leased delivery takes a connection of its origin (Scheduler::StartSend) and is sent, or
  // waits in parked_ until one is granted to it (SendGranted).
  void SendWhenConnected(const std::string& key, uint64_t sequence, storage::Delivery d);
  // Sends the parked deliveries the Scheduler granted a connection (after an EndSend).
  void SendGranted();
  void Send(const std::string& key, uint64_t sequence, storage::Delivery d);
  // When the destination's shard is no longer this node's (Owned): releases the dispatched
  // delivery `d` unsent (back to queued) and returns true.
  bool ReturnUnowned(const std::string& key, uint64_t sequence, const storage::Delivery& d);
  // (Re)arms held_timer_ for the first held request.
  void ArmHeld();
  // Hands every held request whose time has come to the transport.
  void SendHeld();
  // Hands `request` to the transport; its answer goes to OnResponse.
  void Transmit(adapters::HttpRequest request, const std::string& key, uint64_t sequence,
                storage::Delivery d, const adapters::PlatformAdapter& adapter);
  // The request of `d` for `adapter` with `credential`, with its OAuth2 access token when the
  // platform needs one: nullopt when the send waits for the token (AccessTokens; it goes on
  // when the fetch ends) or ended already (a token endpoint that failed for a passing reason:
  // the attempt failed as a connection would).
  std::optional<Result<adapters::HttpRequest>> RequestWithToken(
      const std::string& key, uint64_t sequence, storage::Delivery& d,
      const adapters::PlatformAdapter& adapter, const adapters::Credential& credential);
  // Fetches the access token of `token_key` from the token endpoint (`request`), then sends
  // what waited for it.
  void FetchToken(const std::string& token_key, const adapters::PlatformAdapter& adapter,
                  adapters::HttpRequest request);
  // Ends the attempt's hold on its connection (Scheduler::EndSend), then HandleResponse(), then
  // sends what the freed connection was granted to.
  void OnResponse(const std::string& key, uint64_t sequence, const storage::Delivery& d,
                  const adapters::PlatformAdapter& adapter, Result<adapters::HttpResponse> r);
  void HandleResponse(const std::string& key, uint64_t sequence, const storage::Delivery& d,
                      const adapters::PlatformAdapter& adapter, Result<adapters::HttpResponse> r);
  // The Scheduler holds a head back (budget, park): counts the deferral and, when it is long,
  // writes it to the store.
  void OnPacingWait(pacing::DestinationId id, const pacing::Deferral& wait);
  // A dispatch was metered by a shadow limit (Scheduler::SetShadowObserver): counts it.
  void OnShadowCheck(pacing::DestinationId id, pacing::BudgetName budget, bool throttled);
  // Stops a Discord token that nears the invalid-request ban line.
  void GuardDiscordToken(Dest& dest, const adapters::AttemptReport& report);
  // Parks every bucket of `dest`'s token until `until`, as a global 429 would.
  void StopDiscordToken(Dest& dest, SteadyTime until, SteadyTime now);
  // Releases the attempt and persists its verdict.
  // `actual_cost`: the adapter's actual units of a delivered attempt (corrects its quota charges).
  void Finish(const std::string& key, const storage::Delivery& d, const pacing::Verdict& verdict,
              std::optional<storage::Attempt> attempt,
              std::optional<int64_t> actual_cost = std::nullopt);
  void OnPersisted(const std::string& key, Result<storage::Delivery> stored);
  // A store call failed for a passing reason: counts it and pauses dispatching for the next
  // back-off. OnStoreOk ends the streak.
  void OnStoreTrouble(std::string_view operation, const Status& error);
  void OnStoreOk() { store_backoff_ = Millis(0); }
  // Holds the destination under the first pause that names it, or lets it go when none does;
  // true when that changed.
  bool ApplyPause(Dest& dest);
  // Counts the destination in or out of paused_ and its relay_egress_paused series (the one
  // series: a change costs the same however many tenants are paused).
  void CountPaused(const Dest& dest, int delta);
  // After the destination's held deliveries changed: its place in the order by oldest deferral.
  void Reindex(Dest& dest);
  DestinationInfo InfoOf(const Dest& dest) const;
  // Reads again the destinations whose read failed.
  void RetryFetches();
  // Moves a record the store could not read out of the destination's way.
  void Repair(const std::string& key, const storage::CorruptRecord& record);
  void ScheduleMaintenance();
  void CheckDrained();
  int64_t WallMs() const { return ToUnixMillis(clock_.WallNow()); }

  boost::asio::io_context& io_;
  boost::asio::any_io_executor storage_;
  storage::QueueStore& store_;
  pacing::Scheduler& scheduler_;
  adapters::HttpTransport& transport_;
  AdapterLookup adapters_;
  const CredentialBook& credentials_;
  const Clock& clock_;
  Metrics& metrics_;
  const Options options_;
  StoreWriter leases_;
  StoreWriter outcomes_;
  adapters::InvalidRequestCounter discord_invalid_;
  adapters::RedisInvalidRequests* shared_invalid_ = nullptr;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer maintenance_;
  // Requests held until their key's meter of departures lets them leave, by that time, and the
  // timer of the first (ArmHeld, SendHeld).
  std::multimap<SteadyTime, HeldSend> held_;
  boost::asio::steady_timer held_timer_;
  std::shared_ptr<bool> alive_;
  bool pump_scheduled_ = false;
  bool draining_ = false;
  bool store_writable_ = true;
  Millis store_backoff_{0};                      // of the current streak of store failures
  std::optional<SteadyTime> store_pause_until_;  // no dispatching before
  std::set<std::string> failed_fetches_;         // destination keys whose read failed
  std::unordered_set<std::string> repairing_;    // ids MoveCorruptToDead is working on
  std::function<void()> drained_;
  std::unordered_map<std::string, Dest> dests_;
  std::unordered_set<std::string> names_;  // Intern's
  // The most each destination's queue may hold now (Options::held_budget over dests_), read by
  // every DestinationQueue; UpdateHoldCap sets it as destinations come and go.
  size_t hold_cap_ = SIZE_MAX;
  void UpdateHoldCap();
  DestinationIndex index_;  // dests_ in listing order; points into dests_' nodes
  // Scheduler id -> its node in dests_, null for none: the Scheduler's ids are its slots, dense
  // and reused (8 bytes a destination; a hash map's node and bucket took 40).
  std::vector<Dest*> by_id_;
  // The offered head of a destination (by Scheduler id) whose id packs in no 16 bytes (none the
  // store makes: its ids are ULIDs).
  std::unordered_map<uint32_t, std::string> long_offered_;
  std::unordered_map<std::string, InFlight> in_flight_;  // delivery id ->
  AccessTokens tokens_;
  std::unordered_map<uint64_t, Parked> parked_;  // send token ->
  uint64_t next_send_token_ = 0;
  bool sending_granted_ = false;  // SendGranted() is running (re-entered by a failed Send)
  BudgetUse budget_use_;
  storage::ShardOwnership* ownership_ = nullptr;  // the store's; null: it owns everything
  const PauseBook* pauses_ = nullptr;
  // Destinations held by a pause, by tenant and platform (relay_egress_paused).
  std::map<std::pair<std::string, std::string>, int64_t> paused_;
  // DrainedPerSecond's counts, by (tenant, platform): tenants with a credential times platforms.
  // Map nodes stay put: each Dest points at its own (Dest::group_drained).
  std::map<std::pair<std::string, std::string>, DrainRate> drain_rates_;
  bool loading_ = false;     // a LoadDestinations walk is on its way
  bool load_again_ = false;  // and another is to follow it
};

}  // namespace egress::service
