#include "dispatcher/pacing/leased_budget_store.h"

#include <algorithm>
#include <array>
#include <utility>

namespace egress::pacing {
namespace {

// At most this many charges per call, as MemoryBudgetStore.

}  // namespace

LeasedBudgetStore::LeasedBudgetStore(const Clock& clock, SharedBudgetBackend& backend,
                                     LeasedBudgetStoreOptions options)
    : clock_(clock), backend_(backend), options_(options), alive_(std::make_shared<bool>(true)) {
  options_.expected_nodes = std::max<int64_t>(1, options_.expected_nodes);
  options_.max_slice = std::max<int64_t>(1, options_.max_slice);
}

LeasedBudgetStore::~LeasedBudgetStore() = default;

GcraParams LeasedBudgetStore::Shared(const GcraParams& params) const {
  GcraParams shared = params;
  shared.interval_ns = SatMul(std::max<int64_t>(1, params.interval_ns), options_.expected_nodes);
  return shared;
}

int64_t LeasedBudgetStore::Usable(Lease& lease, int64_t now_ns) {
  if (lease.units > 0 && lease.expires_ns <= now_ns) {
    units_expired_ += static_cast<uint64_t>(lease.units);
    lease.units = 0;
  }
  return lease.units;
}

int64_t LeasedBudgetStore::Slice(const Charge& charge) const {
  const int64_t interval = std::max<int64_t>(1, charge.params.interval_ns);
  const int64_t slice =
      std::clamp<int64_t>(options_.lease_window.count() / interval, 1, options_.max_slice);
  return std::max(slice, charge.cost);
}

Result<TakeResult> LeasedBudgetStore::TakeWhileDown(std::span<const Charge> charges,
                                                    SteadyTime now) {
  if (options_.down_mode == BackendDownMode::kHold) {
    return Status::Unavailable("the shared budget store cannot be reached");
  }
  std::array<Charge, kMaxCharges> shared;
  for (size_t i = 0; i < charges.size(); ++i) {
    shared[i] = charges[i];
    shared[i].params = Shared(charges[i].params);
  }
  return fallback_.TakeAll(std::span<const Charge>(shared.data(), charges.size()), now);
}

Result<TakeResult> LeasedBudgetStore::TakeAll(std::span<const Charge> charges, SteadyTime now) {
  if (charges.size() > kMaxCharges) {
    return Status::InvalidArgument("too many scopes in one charge");
  }
  const bool up = backend_.up();
  if (up && !was_up_) {
    // Back to shared budgets: what was leased before the outage is gone with it.
    for (auto& [key, lease] : leases_) {
      lease.units = 0;
      lease.denied_until_ns = 0;
    }
  }
  was_up_ = up;
  if (!up) {
    return TakeWhileDown(charges, now);
  }
  const int64_t now_ns = ToNanos(now);
  TakeResult result;
  result.allowed = true;
  bool missing = false;
  size_t missing_index = 0;
  int64_t valid_wait = 0;  // until every reserved slice of the path may go
  size_t valid_index = 0;
  bool pending = false;  // a slice for a scope of the path is on its way
  for (size_t i = 0; i < charges.size(); ++i) {
    auto it = leases_.find(charges[i].key);
    if (it == leases_.end()) {
      if (!missing) {
        missing = true;
        missing_index = i;
      }
      continue;
    }
    Lease& lease = it->second;
    if (lease.parked_until_ns > now_ns) {
      result.allowed = false;
      result.denied_index = i;
      result.retry_after = Nanos(lease.parked_until_ns - now_ns);
      result.park = lease.park;
      return result;
    }
    if (lease.denied_until_ns > now_ns) {
      const Nanos wait(lease.denied_until_ns - now_ns);
      if (result.allowed || wait > result.retry_after) {
        result.denied_index = i;
        result.retry_after = wait;
      }
      result.allowed = false;
    } else if (Usable(lease, now_ns) < charges[i].cost) {
      if (!missing) {
        missing = true;
        missing_index = i;
      }
      pending = pending || lease.pending;
    } else if (lease.valid_from_ns - now_ns > valid_wait) {
      valid_wait = lease.valid_from_ns - now_ns;
      valid_index = i;
    }
  }
  if (!result.allowed) {
    return result;
  }
  if (missing) {
    // The slices a path lacks are asked together, and only when none of its scopes waits for
    // one: a slice of one scope taken while another keeps the path waiting would often expire
    // unspent (a channel's 1-per-second unit lost while the global budget is queued for).
    if (!pending && valid_wait == 0) {
      RequestLeases(charges, now_ns);
    }
    result.allowed = false;
    result.denied_index = valid_wait > 0 ? valid_index : missing_index;
    result.retry_after = valid_wait > 0 ? Nanos(valid_wait) : options_.lease_wait;
    return result;
  }
  if (valid_wait > 0) {
    result.allowed = false;
    result.denied_index = valid_index;
    result.retry_after = Nanos(valid_wait);
    return result;
  }
  result.remaining = INT64_MAX;
  for (const Charge& charge : charges) {
    Lease& lease = leases_[charge.key];
    lease.units -= charge.cost;
    result.remaining = std::min(result.remaining, lease.units);
  }
  return result;
}

void LeasedBudgetStore::RequestLeases(std::span<const Charge> charges, int64_t now_ns) {
  std::vector<Charge> ask(charges.begin(), charges.end());
  // The path sends no faster than its slowest scope: a slice larger than that one's would mostly
  // expire unspent (a tenant's 1,000/s slice of 19 beside the Discord global's 1 wasted 18 units
  // of the tenant's meter per global unit, until that meter ran late and held the global back).
  int64_t path_slice = INT64_MAX;
  for (const Charge& charge : charges) {
    path_slice = std::min(path_slice, Slice(charge));
  }
  bool any = false;
  for (Charge& charge : ask) {
    Lease& lease = leases_[charge.key];
    if (lease.pending || Usable(lease, now_ns) >= charge.cost) {
      charge.cost = 0;  // only its park is checked
    } else {
      charge.cost = std::min(Slice(charge), std::max(charge.cost, path_slice));
      lease.pending = true;
      any = true;
    }
  }
  if (!any) {
    return;
  }
  ++lease_requests_;
  std::weak_ptr<bool> alive = alive_;
  std::vector<Charge> asked = ask;
  backend_.TakeAll(std::move(ask), options_.reserve_ahead,
                   [this, alive, asked = std::move(asked)](Result<TakeResult> answer) {
                     if (alive.expired()) {
                       return;
                     }
                     OnLeaseAnswer(asked, answer);
                   });
}

void LeasedBudgetStore::OnLeaseAnswer(const std::vector<Charge>& asked,
                                      const Result<TakeResult>& answer) {
  const int64_t now_ns = ToNanos(clock_.Now());
  for (const Charge& charge : asked) {
    if (charge.cost > 0) {
      leases_[charge.key].pending = false;
    }
  }
  if (!answer.has_value()) {
    // Down now (TakeAll answers from memory or holds), or a failed script: ask again later,
    // not at every look.
    for (const Charge& charge : asked) {
      if (charge.cost > 0) {
        leases_[charge.key].denied_until_ns = now_ns + options_.error_wait.count();
      }
    }
    return;
  }
  if (answer->allowed) {
    for (const Charge& charge : asked) {
      if (charge.cost > 0) {
        Lease& lease = leases_[charge.key];
        Usable(lease, now_ns);
        // Units left from an earlier lease are dropped: every unit goes within lease_ttl.
        units_expired_ += static_cast<uint64_t>(std::max<int64_t>(0, lease.units));
        lease.units = charge.cost;
        // A reservation goes when it conforms, and no later than max_late after that.
        lease.valid_from_ns = SatAdd(now_ns, answer->retry_after.count());
        // A slice of several units (a budget faster than one unit per lease_window) is spent
        // over lease_ttl, as it always was: spent by the unit it would cost a round trip each.
        const int64_t late =
            charge.cost > 1
                ? options_.lease_ttl.count()
                : std::min(options_.lease_ttl.count(),
                           std::max(options_.max_late.count(), charge.params.interval_ns));
        lease.expires_ns = SatAdd(lease.valid_from_ns, late);
      }
    }
    return;
  }
  if (answer->denied_index >= asked.size()) {
    return;
  }
  ++leases_denied_;
  const Charge& denied = asked[answer->denied_index];
  Lease& lease = leases_[denied.key];
  // Redis holds what other nodes (or anyone who can reach it) wrote: a wait is believed up to
  // what it could honestly be (a meter's whole depth; a park, kMaxSharedPark), then the scope
  // asks again, so a damaged key cannot hold it for years.
  const int64_t honest_ns =
      answer->park != ParkKind::kNone
          ? kMaxSharedPark.count()
          : SatMul(denied.params.interval_ns, SatAdd(denied.params.depth, denied.cost));
  const int64_t until_ns =
      SatAdd(now_ns, std::clamp<int64_t>(answer->retry_after.count(), 0, honest_ns));
  if (answer->park != ParkKind::kNone) {
    if (until_ns > lease.parked_until_ns) {
      lease.parked_until_ns = until_ns;
      lease.park = answer->park;
    }
    lease.units = 0;
  } else {
    lease.denied_until_ns = until_ns;
  }
}

Status LeasedBudgetStore::Park(ScopeKey key, SteadyTime until, ParkKind kind) {
  const int64_t until_ns = ToNanos(until);
  Lease& lease = leases_[key];
  if (until_ns > lease.parked_until_ns) {
    lease.parked_until_ns = until_ns;
    lease.park = kind;
  }
  lease.units = 0;  // nothing of a parked key may go
  if (share_writes_) {
    backend_.Park(key, Nanos(std::max<int64_t>(0, until_ns - ToNanos(clock_.Now()))), kind);
  }
  return fallback_.Park(key, until, kind);
}

Status LeasedBudgetStore::Unpark(ScopeKey key) {
  auto it = leases_.find(key);
  if (it != leases_.end()) {
    it->second.parked_until_ns = 0;
    it->second.park = ParkKind::kNone;
    it->second.denied_until_ns = 0;
  }
  if (share_writes_) {
    backend_.Unpark(key);
  }
  return fallback_.Unpark(key);
}

Status LeasedBudgetStore::Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to,
                                  SteadyTime now) {
  auto it = leases_.find(key);
  if (it != leases_.end()) {
    it->second.denied_until_ns = 0;  // ask the shared meter again under the new budget
  }
  if (share_writes_) {
    backend_.Rescale(key, from, to);
  }
  return fallback_.Rescale(key, Shared(from), Shared(to), now);
}

Status LeasedBudgetStore::Sync(ScopeKey key, const GcraParams& params, int64_t available,
                               SteadyTime now) {
  if (params.interval_ns <= 0) {
    return Status::InvalidArgument("sync needs a budget with an interval");
  }
  auto it = leases_.find(key);
  if (it != leases_.end()) {
    // The platform's count already says what is left: units leased before it would be extra.
    it->second.units = 0;
    it->second.denied_until_ns = 0;
  }
  if (share_writes_) {
    backend_.Sync(key, params, available);
  }
  return fallback_.Sync(key, Shared(params), available / options_.expected_nodes, now);
}

Result<MeterView> LeasedBudgetStore::Inspect(ScopeKey key, const GcraParams& params,
                                             SteadyTime now) {
  if (!backend_.up()) {
    return fallback_.Inspect(key, Shared(params), now);
  }
  const int64_t now_ns = ToNanos(now);
  MeterView view;
  auto it = leases_.find(key);
  if (it == leases_.end()) {
    view.remaining = std::max<int64_t>(0, params.depth);
    return view;
  }
  Lease& lease = it->second;
  view.remaining = Usable(lease, now_ns);
  if (lease.denied_until_ns > now_ns) {
    view.reset_after = Nanos(lease.denied_until_ns - now_ns);
  } else if (view.remaining > 0 && lease.valid_from_ns > now_ns) {
    view.reset_after = Nanos(lease.valid_from_ns - now_ns);
  } else if (view.remaining == 0 && lease.pending) {
    // A slice is on its way: let that many waiters look again.
    view.remaining = std::max<int64_t>(1, std::min(params.depth, options_.max_slice));
  }
  if (lease.parked_until_ns > now_ns) {
    view.parked_until = FromNanos(lease.parked_until_ns);
    view.park = lease.park;
    view.remaining = 0;
  }
  return view;
}

size_t LeasedBudgetStore::Sweep(SteadyTime now) {
  const int64_t now_ns = ToNanos(now);
  size_t dropped = 0;
  for (auto it = leases_.begin(); it != leases_.end();) {
    Lease& lease = it->second;
    if (!lease.pending && Usable(lease, now_ns) == 0 && lease.denied_until_ns <= now_ns &&
        lease.parked_until_ns <= now_ns) {
      it = leases_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped + fallback_.Sweep(now);
}

}  // namespace egress::pacing
