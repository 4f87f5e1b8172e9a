#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget_store.h"
#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/shared_budget_backend.h"

namespace egress::pacing {

// What a node does with its budgets while the shared backend is down.
enum class BackendDownMode : uint8_t {
  kLocalShare,  // pace every scope in memory at 1/expected_nodes of its budget
  kHold,        // TakeAll fails with kUnavailable: heads wait with budget_store_unavailable
};

// The longest a park read from the shared backend holds a scope before it is asked again (a
// platform's Retry-After or reset is minutes at most).
inline constexpr Nanos kMaxSharedPark{3'600'000'000'000};

struct LeasedBudgetStoreOptions {
  // A slice is what a scope's budget allows in this time (at least one charge, at most
  // max_slice). Default: 20 ms.
  Nanos lease_window{20'000'000};
  // Most units leased from one scope at once. Default: 64.
  int64_t max_slice = 64;
  // Leased units not spent within this time of when they may go are dropped (never given back),
  // whatever max_late allows. Default: 100 ms.
  Nanos lease_ttl{100'000'000};
  // A unit of a one-unit slice goes at most this long after it may go (its budget's interval
  // when longer; never beyond lease_ttl); unspent by then it is dropped. A platform measures
  // windows: units counted T apart but sent late by different amounts land closer than T, and
  // a budget paced with a margin m (server.pacing_margin_percent) absorbs a spread of only about
  // m × its window (5 % of the Discord global's 1 s: 50 ms), of which the node's own lateness
  // must stay a part. Slices of several units (budgets faster than one unit per lease_window)
  // keep lease_ttl. Default: 20 ms.
  Nanos max_late{20'000'000};
  // A lease request may reserve units that conform within this time: the shared meter hands
  // them out now, to go when they conform (SharedBudgetBackend::TakeAll). Nodes then queue for a
  // busy budget in the shared meter instead of each asking again when it frees, which would
  // lose a round trip and a wake-up of the budget's time per unit. 0 asks only for units that
  // conform at once. Default: 100 ms.
  Nanos reserve_ahead{100'000'000};
  // The wait TakeAll answers while a lease is on its way. Default: 1 ms.
  Nanos lease_wait{1'000'000};
  // How long a scope whose lease request failed waits before asking again. Default: 100 ms.
  Nanos error_wait{100'000'000};
  // Nodes sharing the backend; local_share paces at 1/expected_nodes. Default: 1.
  int64_t expected_nodes = 1;
  BackendDownMode down_mode = BackendDownMode::kLocalShare;
};

// The synchronous BudgetStore the Scheduler asks, over a SharedBudgetBackend answered later
// (docs/pacing.md, "Shared budgets"). Each scope holds a local lease: units taken from the shared
// meter ahead, spent locally, dropped after lease_ttl. TakeAll spends leases when every scope of
// the path holds enough; otherwise it asks the backend for a slice of each scope that lacks one
// (one atomic call over the whole path, all or none) and denies for lease_wait. A slice may be
// reserved up to reserve_ahead before it conforms (every meter of the path counts it at the time
// it may go); TakeAll then waits until it does. A shared denial or park is mirrored locally until
// it ends. Since every unit sent came out of the shared meter, the nodes together never exceed a
// budget's meter; a unit is sent at most max_late (or its slice's own time) after the time the
// meter counts it at, so the spread of lateness stays within what the pacing margin absorbs.
//
// While the backend is down, kLocalShare answers from an in-memory store at 1/expected_nodes of
// every budget (parks are mirrored there too) and kHold fails TakeAll with kUnavailable. When it
// returns, leases start afresh.
//
// Not thread-safe: all methods, and the backend's callbacks, run on the dispatcher loop. `clock`
// and `backend` must outlive the store; callbacks arriving after it is gone are ignored.
class LeasedBudgetStore final : public BudgetStore {
 public:
  LeasedBudgetStore(const Clock& clock, SharedBudgetBackend& backend,
                    LeasedBudgetStoreOptions options);
  ~LeasedBudgetStore() override;

  Result<TakeResult> TakeAll(std::span<const Charge> charges, SteadyTime now) override;
  Status Park(ScopeKey key, SteadyTime until, ParkKind kind) override;
  Status Unpark(ScopeKey key) override;
  Status Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to,
                 SteadyTime now) override;
  Status Sync(ScopeKey key, const GcraParams& params, int64_t available, SteadyTime now) override;
  Result<MeterView> Inspect(ScopeKey key, const GcraParams& params, SteadyTime now) override;
  size_t Sweep(SteadyTime now) override;

  // While false, Park, Unpark, Rescale and Sync change only this node's leases and its in-memory
  // store, not the backend's meters: for an operator override another node applied to them
  // already (a rescale applied once per node would compound). Default: true.
  void set_share_writes(bool share) { share_writes_ = share; }

  // Lease requests sent to the backend so far.
  uint64_t lease_requests() const { return lease_requests_; }
  // Units dropped unspent at the end of their lease.
  uint64_t units_expired() const { return units_expired_; }
  // Lease requests the shared meter denied (a wait, not a park).
  uint64_t leases_denied() const { return leases_denied_; }

 private:
  struct Lease {
    int64_t units = 0;
    int64_t valid_from_ns = 0;  // a reserved slice goes from then on
    int64_t expires_ns = 0;
    int64_t denied_until_ns = 0;  // the shared meter said no until then
    int64_t parked_until_ns = 0;
    ParkKind park = ParkKind::kNone;
    bool pending = false;  // a request for this key is on its way
  };

  // The params local_share paces at: the interval times expected_nodes.
  GcraParams Shared(const GcraParams& params) const;
  Result<TakeResult> TakeWhileDown(std::span<const Charge> charges, SteadyTime now);
  int64_t Slice(const Charge& charge) const;
  void RequestLeases(std::span<const Charge> charges, int64_t now_ns);
  void OnLeaseAnswer(const std::vector<Charge>& asked, const Result<TakeResult>& answer);
  // Units of `lease` usable at `now_ns` (0 when expired; counts the expiry).
  int64_t Usable(Lease& lease, int64_t now_ns);

  const Clock& clock_;
  SharedBudgetBackend& backend_;
  LeasedBudgetStoreOptions options_;
  std::unordered_map<ScopeKey, Lease> leases_;
  MemoryBudgetStore fallback_;
  bool was_up_ = true;
  bool share_writes_ = true;
  uint64_t lease_requests_ = 0;
  uint64_t units_expired_ = 0;
  uint64_t leases_denied_ = 0;
  std::shared_ptr<bool> alive_;
};

}  // namespace egress::pacing
