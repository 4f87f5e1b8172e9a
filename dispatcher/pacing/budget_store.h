#pragma once

#include <cstdint>
#include <span>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "dispatcher/pacing/gcra_meter.h"

namespace egress::pacing {

// A meter key: the 64-bit hash of a scope's identity (see scope_path.h). Two identities with
// the same hash share one meter, which can only make pacing stricter, never looser.
using ScopeKey = uint64_t;

// The most charges one TakeAll takes: a path's scopes (at most kMaxScopes, scope_path.h) and a
// bulk head's share meter for each of them but its own (SchedulerOptions::bulk_share).
inline constexpr size_t kMaxCharges = 12;

// One scope of a path to charge: its key, its budget (parameters travel with each call, as
// with redis-cell), and the cost in units.
struct Charge {
  ScopeKey key = 0;
  GcraParams params;
  int64_t cost = 1;
};

// Why a key holds deliveries back beyond its GCRA meter.
enum class ParkKind : uint8_t {
  kNone,
  kRetryAfter,     // a Retry-After (or a 429 without one)
  kRemainingZero,  // remaining == 0 with a reset time
};

// The answer of TakeAll.
struct TakeResult {
  bool allowed = false;
  // On denial: the index into the charges of the scope that denied (the first parked one, else
  // the one with the longest wait), the exact wait, and whether a park (not the meter) denied.
  size_t denied_index = 0;
  Nanos retry_after{0};
  ParkKind park = ParkKind::kNone;
  // On acceptance: the least `remaining` over all scopes, and the longest `reset_after`.
  // (A SharedBudgetBackend reservation also sets `retry_after`: when the units may go.)
  int64_t remaining = 0;
  Nanos reset_after{0};
};

// The state of one key, for inspection (GET /v1/destinations).
struct MeterView {
  int64_t remaining = 0;
  Nanos reset_after{0};
  SteadyTime parked_until{};
  ParkKind park = ParkKind::kNone;
};

// Where GCRA meters live. MemoryBudgetStore keeps them in process; a Redis implementation will
// run TakeAll as one atomic Lua script (GET every key, check every meter, SET all or none) so that
// several nodes share one budget. Such a store may use its own time source (Redis TIME) instead
// of `now`. Errors are kUnavailable (the store cannot be reached); the caller defers and retries.
// MemoryBudgetStore is not thread-safe: all methods run on the dispatcher loop.
class BudgetStore {
 public:
  virtual ~BudgetStore() = default;

  // Checks every charge at `now` and, only if all conform and none is parked, takes all of them.
  // No unit is taken from any scope when one denies.
  virtual Result<TakeResult> TakeAll(std::span<const Charge> charges, SteadyTime now) = 0;

  // Holds every charge on `key` until `until` (a later park wins; an earlier one is ignored).
  virtual Status Park(ScopeKey key, SteadyTime until, ParkKind kind) = 0;

  // Ends a park at once (e.g. an operator override).
  virtual Status Unpark(ScopeKey key) = 0;

  // The budget of `key` changed from `from` to `to` (an operator override): the units its meter
  // still owes at `now` are kept, now paid at the new interval. Raising a budget frees the scope
  // at once and lowering one slows it, instead of the old pace lasting until the meter drains
  // (an hour, after a 1-per-hour budget). A key never charged is left alone.
  virtual Status Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to,
                         SteadyTime now) = 0;

  // The platform stated how many units `key` has left (Discord X-RateLimit-Remaining, or 0 after
  // a 429 that taught a smaller burst): sets its meter under `params` so that exactly
  // `available` units (clamped to [0, burst]) can be taken at `now`, then refills at the
  // budget's rate. May loosen the meter as well as tighten it: the platform knows best.
  virtual Status Sync(ScopeKey key, const GcraParams& params, int64_t available,
                      SteadyTime now) = 0;

  // The key's state at `now` under `params`; a key never charged is empty.
  virtual Result<MeterView> Inspect(ScopeKey key, const GcraParams& params, SteadyTime now) = 0;

  // Forgets keys whose state equals a fresh key's at `now` (meter drained, park over). Returns
  // how many were dropped. Memory then grows with keys in use, not with keys ever seen.
  virtual size_t Sweep(SteadyTime now) = 0;
};

}  // namespace egress::pacing
