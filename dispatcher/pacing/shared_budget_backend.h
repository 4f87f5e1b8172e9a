#pragma once

#include <functional>
#include <vector>

#include "dispatcher/base/result.h"
#include "dispatcher/pacing/budget_store.h"

namespace egress::pacing {

// A budget store shared by several nodes and reached asynchronously (the Redis store,
// adapters/redis_budget_backend.h). Every call returns at once; answers come later through a
// callback on the dispatcher loop. It keeps its own clock (Redis TIME), so waits are relative.
// LeasedBudgetStore turns it into the synchronous BudgetStore the Scheduler asks. All methods and
// callbacks run on the dispatcher loop.
class SharedBudgetBackend {
 public:
  using TakeCallback = std::function<void(Result<TakeResult>)>;

  virtual ~SharedBudgetBackend() = default;

  // As BudgetStore::TakeAll, atomically at the backend's now: takes `cost` units from every
  // charge or none, parks first. A charge of cost 0 only checks its park. `reserve_ahead` lets
  // the take reserve: when every meter conforms within that time (and none is parked), all are
  // taken now and the answer is allowed with `retry_after` the wait until the last of them
  // conforms, when the units may go (0 when they may go at once). Each meter is charged as if
  // taken when it conforms, so a reservation wastes none of the budget's time. With 0 it is
  // BudgetStore::TakeAll. `done` runs exactly once, also when the backend cannot be reached
  // (kUnavailable).
  virtual void TakeAll(std::vector<Charge> charges, Nanos reserve_ahead, TakeCallback done) = 0;
  // As BudgetStore::Park, for `wait` from the backend's now. Fire and forget.
  virtual void Park(ScopeKey key, Nanos wait, ParkKind kind) = 0;
  virtual void Unpark(ScopeKey key) = 0;
  virtual void Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to) = 0;
  virtual void Sync(ScopeKey key, const GcraParams& params, int64_t available) = 0;
  // Whether the backend is reachable now (connected, and its last call did not fail).
  virtual bool up() const = 0;
};

}  // namespace egress::pacing
