#include "dispatcher/pacing/scheduler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "dispatcher/base/check.h"
#include "dispatcher/base/saturating.h"

namespace egress::pacing {
namespace {

constexpr uint32_t kNil = ScopeTable::kNil;

uint32_t OrderingHash(const std::string& key) {
  if (key.empty()) {
    return 0;
  }
  const uint64_t wide = std::hash<std::string>{}(key);
  const auto h = static_cast<uint32_t>(wide ^ (wide >> 32));
  return h == 0 ? 1 : h;
}

// The key of a shared scope's bulk meter (SchedulerOptions::bulk_share): the scope's key mixed
// by SplitMix64's finalizer, so it meets no scope's own key.
ScopeKey BulkKey(ScopeKey key) {
  uint64_t z = key + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// `share` of a meter: its emission interval stretched and its depth cut by it. A scope counted
// in windows (`windowed`: its meter holds twice the window's count, Scheduler::Shape) gives bulk
// its share of one window's count.
GcraParams BulkParams(const GcraParams& params, double share, bool windowed) {
  GcraParams out;
  out.interval_ns = static_cast<int64_t>(
      std::min(9.0e18, std::ceil(static_cast<double>(params.interval_ns) / share)));
  const int64_t depth = windowed ? std::max<int64_t>(1, params.depth / 2) : params.depth;
  out.depth = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(depth) * share));
  return out;
}

static_assert(2 * kMaxScopes <= kMaxCharges, "a bulk head's charges fit one TakeAll");

}  // namespace

Scheduler::Scheduler(const Clock& clock, BudgetStore& store, Random& random,
                     SchedulerOptions options)
    : clock_(clock),
      store_(store),
      random_(random),
      options_(std::move(options)),
      conns_(options_.connections) {
  scopes_.set_margin(std::clamp(options_.pacing_margin, 0.0, 0.5));
  options_.bulk_share =
      std::isnan(options_.bulk_share) ? 1.0 : std::clamp(options_.bulk_share, 0.01, 1.0);
  for (const PlatformScopes& platform : options_.scopes) {
    for (const ScopeRule& rule : platform.rules) {
      windowed_names_[static_cast<size_t>(rule.budget)] |= rule.window;
    }
  }
}

Result<Scheduler::Dest*> Scheduler::Find(DestinationId id) {
  if (id.value >= dests_.size() || !dests_[id.value].live) {
    return Status::NotFound("destination " + std::to_string(id.value));
  }
  return &dests_[id.value];
}

Result<const Scheduler::Dest*> Scheduler::Find(DestinationId id) const {
  if (id.value >= dests_.size() || !dests_[id.value].live) {
    return Status::NotFound("destination " + std::to_string(id.value));
  }
  return &dests_[id.value];
}

uint32_t Scheduler::TenantIndex(const std::string& name) {
  auto [it, inserted] = tenant_index_.try_emplace(name, static_cast<uint32_t>(tenants_.size()));
  if (inserted) {
    tenants_.push_back(Tenant{});
    tenants_.back().name = name;
  }
  return it->second;
}

Result<DestinationId> Scheduler::AddDestination(const DestinationSpec& spec) {
  Result<ScopePath> path = BuildScopePath(spec, options_.scopes[PlatformIndex(spec.platform)]);
  if (!path.has_value()) {
    return path.error();
  }
  const uint32_t tenant = TenantIndex(spec.tenant);
  uint32_t d;
  if (free_dests_.empty()) {
    d = static_cast<uint32_t>(dests_.Grow());
  } else {
    d = free_dests_.back();
    free_dests_.pop_back();
  }
  Dest& dest = dests_[d];
  const uint32_t generation = dest.generation + 1;
  dest = Dest{};
  dest.generation = generation;
  dest.live = true;
  dest.tenant = tenant;
  dest.platform = spec.platform;
  dest.scope_count = path->size;
  dest.credential_index = path->credential_index;
  dest.retry_after_index = path->retry_after_index;
  dest.leaf_index = path->leaf_index;
  dest.shared_shape = path->shared_shape && path->credential_index != path->leaf_index;
  dest.park_leaf_with_room = path->park_leaf_with_room;
  dest.startup_window = path->startup_window;
  dest.origin = conns_.Acquire(spec.origin);
  for (uint8_t i = 0; i < path->size; ++i) {
    const BudgetName name = path->budgets[i];
    dest.scopes[i] = scopes_.Acquire(path->keys[i], name, tenant,
                                     Shape(name, budgets_.Effective(spec.tenant, name)));
  }
  if (spec.platform == Platform::kDiscord) {
    discord_[d] = DiscordKeys{path->discord_route, path->discord_major, 0};
    RekeyDiscord(d);
  }
  AdoptPendingShared(dest.scopes[dest.leaf_index]);
  ++live_count_;
  return DestinationId{d};
}

Status Scheduler::RemoveDestination(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  Dest& dest = **found;
  if (dest.has_head || dest.in_flight > 0 || dest.state != State::kEmpty) {
    return Status::FailedPrecondition("destination has work");
  }
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    ReleaseScope(dest.scopes[i]);
  }
  conns_.Release(dest.origin);
  dest.origin = ConnectionBudget::kNoOrigin;
  dest.live = false;
  ClearHeadId(id.value);
  held_.erase(id.value);
  disabled_reasons_.erase(id.value);
  paused_reasons_.erase(id.value);
  discord_.erase(id.value);
  free_dests_.push_back(id.value);
  --live_count_;
  return Status::Ok();
}

Status Scheduler::Offer(DestinationId id, WorkItem&& item) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  Dest& dest = **found;
  if (item.cost < 1 || item.cost > 1'000'000) {
    return Status::InvalidArgument("cost must be in [1, 1000000]");
  }
  if (dest.has_head && item.sequence >= dest.head_sequence) {
    return Status::AlreadyExists("destination already holds an earlier head");
  }
  ClearHeadId(id.value);
  const IdForm form = PackedId::Pack(item.id, dest.head_id);
  dest.head_form = static_cast<uint8_t>(form);
  if (form == IdForm::kLong) {
    long_ids_[id.value] = std::move(item.id);
  }
  dest.head_sequence = item.sequence;
  dest.head_cost = static_cast<uint32_t>(item.cost);
  dest.head_ordering = OrderingHash(item.ordering_key);
  const auto priority = static_cast<uint8_t>(PriorityLane(item.priority));
  if (priority != dest.head_priority) {
    // An earlier head of another priority: where it waits, its lane changes too.
    if (dest.state == State::kReady || dest.state == State::kScopeWait) {
      Relane(id.value, priority);
    } else if (dest.state == State::kConnWait) {
      conns_.Rewait(dest.origin, dest.tenant, id.value, static_cast<Priority>(priority));
    }
  }
  dest.head_priority = priority;
  dest.head_not_before_ns = ToNanos(item.not_before);
  dest.head_wait_reason = item.wait_reason;
  dest.has_head = true;
  if (dest.state == State::kEmpty || dest.state == State::kTimer || dest.state == State::kBlocked) {
    ++dest.generation;
    MakeReady(id.value);
  } else if (dest.state == State::kDisabled && dest.paused && !dest.disabled) {
    TellPaused(id.value);  // an earlier head replaced the held one: it is held now
  }
  return Status::Ok();
}

Status Scheduler::Withdraw(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  Dest& dest = **found;
  if (!dest.has_head) {
    return Status::Ok();
  }
  ReleaseOrdering(id.value, dest.head_sequence, false);
  dest.has_head = false;
  ClearHeadId(id.value);
  if (dest.state == State::kTimer || dest.state == State::kBlocked ||
      dest.state == State::kDisabled) {
    ++dest.generation;
    dest.state = State::kEmpty;
  }
  dest.reason = DeferReason::kNone;
  return Status::Ok();
}

void Scheduler::PushBack(WaitLanes& lanes, uint32_t d) {
  const int lane = dests_[d].head_priority;  // Offer holds it to a lane
  dests_[d].link = kNil;
  if (lanes.tail[lane] == kNil) {
    lanes.head[lane] = d;
  } else {
    dests_[lanes.tail[lane]].link = d;
  }
  lanes.tail[lane] = d;
}

void Scheduler::PushFront(WaitLanes& lanes, uint32_t d) {
  const int lane = dests_[d].head_priority;
  dests_[d].link = lanes.head[lane];
  lanes.head[lane] = d;
  if (lanes.tail[lane] == kNil) {
    lanes.tail[lane] = d;
  }
}

bool Scheduler::Unlink(WaitLanes& lanes, uint32_t d) {
  const int lane = dests_[d].head_priority;
  uint32_t prev = kNil;
  uint32_t cur = lanes.head[lane];
  while (cur != kNil && cur != d) {
    prev = cur;
    cur = dests_[cur].link;
  }
  if (cur == kNil) {
    return false;
  }
  (prev == kNil ? lanes.head[lane] : dests_[prev].link) = dests_[d].link;
  if (lanes.tail[lane] == d) {
    lanes.tail[lane] = prev;
  }
  dests_[d].link = kNil;
  return true;
}

void Scheduler::Relane(uint32_t d, uint8_t priority) {
  Dest& dest = dests_[d];
  const auto move = [&](WaitLanes& lanes) {
    if (!Unlink(lanes, d)) {
      return false;
    }
    dest.head_priority = priority;
    PushBack(lanes, d);
    return true;
  };
  if (dest.state == State::kReady) {
    move(tenants_[dest.tenant].ready[static_cast<size_t>(dest.platform)]);
    return;
  }
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    if (move(scopes_.at(dest.scopes[i]).waiting)) {
      return;
    }
  }
}

uint32_t Scheduler::PopFront(WaitLanes& lanes) {
  const int lane = lanes.first_lane();
  EGRESS_CHECK(lane >= 0);
  const uint32_t d = lanes.head[lane];
  lanes.head[lane] = dests_[d].link;
  if (lanes.head[lane] == kNil) {
    lanes.tail[lane] = kNil;
  }
  dests_[d].link = kNil;
  return d;
}

void Scheduler::MakeReady(uint32_t d) {
  Dest& dest = dests_[d];
  dest.state = State::kReady;
  dest.reason = DeferReason::kNone;
  Tenant& tenant = tenants_[dest.tenant];
  const auto p = static_cast<size_t>(dest.platform);
  if (tenant.ready[p].empty() && tenant.in_flight[p] == 0) {
    ++platform_tenants_[p];
  }
  PushBack(tenant.ready[p], d);
  tenant.ready_mask |= 1u << p;
  if (!tenant.in_ring) {
    tenant.in_ring = true;
    tenant.turn = false;
    tenant.deficit = 0;
    ring_.push_back(dest.tenant);
  }
}

void Scheduler::ArmTimer(uint32_t d, int64_t at_ns, DeferReason reason) {
  Dest& dest = dests_[d];
  dest.state = State::kTimer;
  dest.reason = reason;
  dest.until_ns = at_ns;
  ++dest.generation;
  timers_.Push(at_ns, d, dest.generation);
}

void Scheduler::ArmScope(uint32_t scope, int64_t at_ns) {
  ScopeTable::Slot& slot = scopes_.at(scope);
  if (slot.armed_ns <= at_ns) {
    return;
  }
  slot.armed_ns = at_ns;
  ++slot.timer_generation;
  timers_.Push(at_ns, scope | kScopeTimerBit, slot.timer_generation);
}

void Scheduler::FireTimers(int64_t now_ns) {
  while (!timers_.empty() && timers_.Top().at_ns <= now_ns) {
    const TimerHeap::Entry entry = timers_.Top();
    timers_.Pop();
    if ((entry.id & kScopeTimerBit) != 0) {
      const uint32_t scope = entry.id & ~kScopeTimerBit;
      ScopeTable::Slot& slot = scopes_.at(scope);
      if (slot.timer_generation == entry.generation && slot.armed_ns != INT64_MAX) {
        slot.armed_ns = INT64_MAX;
        ReleaseScopeWaiters(scope, now_ns);
      }
      continue;
    }
    Dest& dest = dests_[entry.id];
    if (dest.state == State::kTimer && dest.generation == entry.generation) {
      MakeReady(entry.id);
    }
  }
}

void Scheduler::ReleaseScopeWaiters(uint32_t scope, int64_t now_ns) {
  ScopeTable::Slot& slot = scopes_.at(scope);
  if (slot.waiting.empty()) {
    return;
  }
  int64_t release = 1;
  Result<MeterView> view = store_.Inspect(slot.key, scopes_.params(scope), FromNanos(now_ns));
  if (view.has_value() && view->park != ParkKind::kNone) {
    ArmScope(scope, ToNanos(view->parked_until));
    return;
  }
  if (view.has_value()) {
    release = std::max<int64_t>(1, view->remaining);
  }
  // Most urgent first (WaitLanes): the units that came go to high heads before normal ones.
  // Bulk waiters no more than their share has units for: the rest would only be looked at and
  // put back, a TakeAll each.
  int64_t bulk_room = -1;
  int64_t bulk_next_ns = 0;  // with no room: when the share has its next unit
  while (release-- > 0 && !slot.waiting.empty()) {
    if (slot.waiting.first_lane() == PriorityIndex(Priority::kBulk) && options_.bulk_share < 1) {
      if (bulk_room < 0) {
        const GcraParams share_params = ShareParams(scope, scopes_.params(scope));
        Result<MeterView> share =
            store_.Inspect(BulkKey(slot.key), share_params, FromNanos(now_ns));
        bulk_room = share.has_value() ? std::max<int64_t>(0, share->remaining) : 1;
        if (bulk_room == 0) {
          // GCRA: the next unit comes (depth - 1) intervals before the meter is empty.
          bulk_next_ns = now_ns + std::max<int64_t>(
                                      1, share->reset_after.count() -
                                             (share_params.depth - 1) * share_params.interval_ns);
        }
      }
      if (bulk_room == 0) {
        break;
      }
      --bulk_room;
    }
    const uint32_t d = PopFront(slot.waiting);
    Dest& dest = dests_[d];
    for (uint8_t i = 0; i < dest.scope_count; ++i) {
      if (dest.scopes[i] == scope) {
        dest.released_index = i;
      }
    }
    MakeReady(d);
  }
  if (bulk_next_ns != 0) {
    ArmScope(scope, bulk_next_ns);
  } else if (!slot.waiting.empty()) {
    ArmScope(scope, now_ns + scopes_.params(scope).interval_ns);
  }
}

std::optional<int64_t> Scheduler::EarliestTimer() {
  while (!timers_.empty()) {
    const TimerHeap::Entry& entry = timers_.Top();
    bool valid;
    if ((entry.id & kScopeTimerBit) != 0) {
      const ScopeTable::Slot& slot = scopes_.at(entry.id & ~kScopeTimerBit);
      valid = slot.timer_generation == entry.generation && slot.armed_ns != INT64_MAX;
    } else {
      const Dest& dest = dests_[entry.id];
      valid = dest.state == State::kTimer && dest.generation == entry.generation;
    }
    if (valid) {
      return entry.at_ns;
    }
    timers_.Pop();
  }
  return std::nullopt;
}

int Scheduler::TenantCap(const Tenant& tenant, int platform) const {
  if (tenant.max_in_flight > 0) {
    return tenant.max_in_flight;
  }
  const int cap = options_.max_in_flight_per_platform[platform];
  // Tenants with deliveries in flight or heads ready on the platform; this one is among them.
  const int tenants = std::max(1, platform_tenants_[platform]);
  return (cap + tenants - 1) / tenants;
}

int Scheduler::PickPlatform(Tenant& tenant) {
  bool any = false;
  const int count = PlatformCount();
  for (int i = 0; i < count; ++i) {
    const int p = (tenant.next_platform + i) % count;
    if ((tenant.ready_mask >> p & 1u) == 0) {
      continue;
    }
    const uint32_t front = tenant.ready[p].front();
    any = true;
    if (platform_in_flight_[p] >= options_.max_in_flight_per_platform[p]) {
      dests_[front].reason = DeferReason::kPlatformConcurrency;
      continue;
    }
    if (tenant.in_flight[p] >= TenantCap(tenant, p)) {
      dests_[front].reason = DeferReason::kTenantConcurrency;
      continue;
    }
    return p;
  }
  return any ? -2 : -1;
}

Decision Scheduler::Next() {
  const int64_t now_ns = ToNanos(clock_.Now());
  FireTimers(now_ns);
  if (!kept_.empty()) {
    ExpireKept(now_ns);
  }
  Decision decision;
  size_t stalled = 0;
  while (!ring_.empty() && stalled < ring_.size()) {
    const uint32_t t = ring_.front();
    Tenant& tenant = tenants_[t];
    const int p = PickPlatform(tenant);
    if (p == -1) {
      ring_.pop_front();
      tenant.in_ring = false;
      continue;
    }
    if (p == -2) {
      ring_.pop_front();
      ring_.push_back(t);
      ++stalled;
      continue;
    }
    const Dest& front = dests_[tenant.ready[p].front()];
    const int64_t cost = front.has_head ? front.head_cost : 0;
    if (!tenant.turn) {
      tenant.deficit += options_.quantum * tenant.weight;
      tenant.turn = true;
    }
    if (tenant.deficit < cost) {
      tenant.turn = false;
      ring_.pop_front();
      ring_.push_back(t);
      continue;
    }
    stalled = 0;
    tenant.next_platform = static_cast<uint8_t>((p + 1) % PlatformCount());
    const uint32_t d = PopFront(tenant.ready[p]);
    if (tenant.ready[p].empty()) {
      tenant.ready_mask &= ~(1u << p);
    }
    if ((tenant.ready_mask >> p & 1u) == 0 && tenant.in_flight[p] == 0) {
      --platform_tenants_[p];  // may come back at once if it dispatches
    }
    if (Evaluate(d, now_ns, decision)) {
      tenant.deficit -= cost;
      return decision;
    }
  }
  std::optional<int64_t> wake = EarliestTimer();
  for (const KeptConnection& k : kept_) {
    wake = std::min(wake.value_or(INT64_MAX), k.until_ns);
  }
  if (wake.has_value()) {
    decision.kind = Decision::Kind::kWait;
    decision.wake_at = FromNanos(*wake);
  }
  return decision;
}

bool Scheduler::Evaluate(uint32_t d, int64_t now_ns, Decision& decision) {
  Dest& dest = dests_[d];
  const bool granted = dest.conn_grant;
  dest.conn_grant = false;
  if (EvaluateHead(d, now_ns, decision, granted)) {
    return true;
  }
  if (granted) {
    // Not sent: the reserved connection goes to the next waiter. Held by a meter for a moment,
    // the destination comes back first, so pacing does not cost it its turn.
    // Only its own meter: a tenant-wide one holding it must not win its tenant extra turns.
    dest.conn_first = dest.has_head && dest.state == State::kTimer &&
                      dest.reason == DeferReason::kBudget &&
                      dest.reason_budget == scopes_.name(dest.scopes[dest.leaf_index]);
    conns_.Return(dest.origin, dest.tenant);
    ApplyGrants();
  }
  return false;
}

bool Scheduler::EvaluateHead(uint32_t d, int64_t now_ns, Decision& decision, bool granted) {
  Dest& dest = dests_[d];
  dest.state = State::kEmpty;
  const uint8_t released = std::exchange(dest.released_index, kNotReleased);
  if (!dest.has_head) {
    return false;
  }
  if (dest.disabled || dest.paused) {
    dest.state = State::kDisabled;
    dest.reason = dest.disabled ? DeferReason::kDestinationDisabled : DeferReason::kPaused;
    if (!dest.disabled) {
      TellPaused(d);
    }
    return false;
  }
  if (dest.head_not_before_ns > now_ns) {
    ArmTimer(d, dest.head_not_before_ns, dest.head_wait_reason);
    return false;
  }
  const auto platform = static_cast<size_t>(dest.platform);
  if (dest.in_flight >= options_.max_in_flight_per_destination[platform]) {
    dest.state = State::kBlocked;
    dest.reason = DeferReason::kConcurrency;
    return false;
  }
  if (dest.head_ordering != 0 && OrderingHeld(d)) {
    dest.state = State::kBlocked;
    dest.reason = DeferReason::kOrdering;
    return false;
  }
  if (!windows_.empty() && MayBeWindowed(dest.platform)) {
    for (uint8_t i = 0; i < dest.scope_count; ++i) {
      const uint32_t scope = dest.scopes[i];
      if (!Windowed(scope)) {
        continue;
      }
      auto it = windows_.find(scopes_.at(scope).key);
      const int64_t next_ns = it == windows_.end() ? now_ns : it->second.NextAllowed(now_ns);
      if (next_ns > now_ns) {
        TakeResult full;
        full.denied_index = i;
        full.retry_after = Nanos(next_ns - now_ns);
        Deny(d, full, now_ns, released);
        return false;
      }
    }
  }
  if (!granted && !conns_.HasRoom(dest.origin, dest.tenant)) {
    dest.state = State::kConnWait;
    dest.reason = DeferReason::kConnections;
    conns_.Wait(dest.origin, dest.tenant, tenants_[dest.tenant].weight, d,
                static_cast<Priority>(dest.head_priority), dest.conn_first);
    dest.conn_first = false;
    ApplyGrants();
    return false;
  }
  if (discord_epoch_ != 0 && dest.platform == Platform::kDiscord) {
    RekeyDiscord(d);
  }
  // Waiters first: while destinations wait in a shared scope's FIFO, a head no scope just
  // released queues behind them rather than taking the unit the first of them is due, so the
  // scope serves its destinations oldest first (one token's channels evenly, to the last). A
  // released head goes on to the meters, so two saturated scopes cannot pass it back and forth.
  // Only waiters as urgent as the head or more count: a high head goes past normal and bulk
  // ones to the meters (Priority). A released head still yields, on the path's other scopes,
  // to waiters more urgent than itself.
  const auto priority = static_cast<Priority>(dest.head_priority);
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    const WaitLanes& waiting = scopes_.at(dest.scopes[i]).waiting;
    if (released == kNotReleased ? waiting.AnyAtOrAbove(priority)
                                 : i != released && waiting.AnyAbove(priority)) {
      const uint32_t scope = dest.scopes[i];
      TakeResult behind;
      behind.denied_index = i;
      behind.retry_after = Nanos(std::max<int64_t>(1, scopes_.params(scope).interval_ns));
      Deny(d, behind, now_ns);
      return false;
    }
  }
  std::array<Charge, kMaxScopes> charges;
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    const uint32_t scope = dest.scopes[i];
    charges[i] = Charge{scopes_.at(scope).key, scopes_.params(scope), dest.head_cost};
  }
  if (dest.startup_window && !StartupAllows(d)) {
    return false;
  }
  int64_t probe_depth = 0;
  SiblingShape* shape =
      dest.shared_shape ? HoldToSiblings(dest, charges[dest.leaf_index], probe_depth) : nullptr;
  const std::span<Charge> path(charges.data(), dest.scope_count);
  const bool bulk = priority == Priority::kBulk && options_.bulk_share < 1;
  Result<TakeResult> taken =
      bulk ? TakeWithShare(dest, path, now_ns) : store_.TakeAll(path, FromNanos(now_ns));
  if (!taken.has_value()) {
    ArmTimer(d, now_ns + Nanos(options_.store_retry).count(), DeferReason::kStoreUnavailable);
    return false;
  }
  if (!taken->allowed && shape != nullptr && taken->park == ParkKind::kNone &&
      taken->denied_index == dest.leaf_index) {
    ProbeSiblings(d, *shape, path, probe_depth, now_ns, *taken);
  }
  if (!taken->allowed) {
    // TakeWithShare names the scope whose share denied, flagged past the path's indices.
    const bool bulk_share = taken->denied_index >= dest.scope_count;
    if (bulk_share) {
      taken->denied_index -= dest.scope_count;
    }
    Deny(d, *taken, now_ns, released, bulk_share);
    return false;
  }
  conns_.Take(dest.origin, dest.tenant, granted);
  dest.conn_first = false;
  if (MayBeWindowed(dest.platform)) {
    for (uint8_t i = 0; i < dest.scope_count; ++i) {
      const uint32_t scope = dest.scopes[i];
      if (Windowed(scope)) {
        const Budget& budget = scopes_.budget(scope);
        windows_
            .try_emplace(scopes_.at(scope).key, budget.limit,
                         budget.scale_ms * 1'000'000 + Nanos(options_.global_window_offset).count())
            .first->second.Record(now_ns);
      }
    }
  }
  DispatchHead(d, decision);
  return true;
}

GcraParams Scheduler::ShareParams(uint32_t scope, const GcraParams& params) const {
  return BulkParams(params, options_.bulk_share, Windowed(scope));
}

Result<TakeResult> Scheduler::TakeWithShare(const Dest& dest, std::span<const Charge> path,
                                            int64_t now_ns) {
  // Made only for a bulk head: twelve Charges built for every decision cost the scheduler's
  // benchmark 70 instructions a decision.
  std::array<Charge, kMaxCharges> charges;
  std::array<uint8_t, kMaxScopes> share_of{};  // share meter j -> its scope's path index
  std::copy(path.begin(), path.end(), charges.begin());
  size_t count = path.size();
  for (uint8_t i = 0; i < path.size(); ++i) {
    if (Shared(dest.scopes[i])) {
      share_of[count - path.size()] = i;
      charges[count++] =
          Charge{BulkKey(path[i].key), ShareParams(dest.scopes[i], path[i].params), path[i].cost};
    }
  }
  Result<TakeResult> taken =
      store_.TakeAll(std::span<const Charge>(charges.data(), count), FromNanos(now_ns));
  if (taken.has_value() && !taken->allowed && taken->denied_index >= path.size()) {
    taken->denied_index = path.size() + share_of[taken->denied_index - path.size()];
  }
  return taken;
}

bool Scheduler::OrderingHeld(uint32_t d) const {
  auto it = held_.find(d);
  if (it == held_.end()) {
    return false;
  }
  const Dest& dest = dests_[d];
  for (const HeldKey& held : it->second) {
    if (held.ordering == dest.head_ordering) {
      return !(held.retrying && held.sequence == dest.head_sequence);
    }
  }
  return false;
}

void Scheduler::Deny(uint32_t d, const TakeResult& result, int64_t now_ns, uint8_t released,
                     bool bulk_share) {
  Dest& dest = dests_[d];
  const uint32_t scope = dest.scopes[result.denied_index];
  ScopeTable::Slot& slot = scopes_.at(scope);
  DeferReason reason = bulk_share ? DeferReason::kBulkShare : DeferReason::kBudget;
  if (result.park == ParkKind::kRetryAfter) {
    reason = DeferReason::kRetryAfter;
  } else if (result.park == ParkKind::kRemainingZero) {
    reason = DeferReason::kRemainingZero;
  }
  dest.reason_budget = scopes_.name(scope);
  const int64_t at_ns = now_ns + std::max<int64_t>(1, result.retry_after.count());
  if (wait_observer_) {
    wait_observer_(
        DestinationId{d},
        Deferral{.reason = reason, .budget = dest.reason_budget, .until = FromNanos(at_ns)});
  }
  if (slot.refs <= 1) {
    ArmTimer(d, at_ns, reason);
    return;
  }
  dest.state = State::kScopeWait;
  dest.reason = reason;
  dest.until_ns = at_ns;
  if (released == result.denied_index) {
    PushFront(slot.waiting, d);  // its turn: a lease on its way, or a unit taken meanwhile
  } else {
    PushBack(slot.waiting, d);
  }
  ArmScope(scope, at_ns);
}

void Scheduler::DispatchHead(uint32_t d, Decision& decision) {
  Dest& dest = dests_[d];
  ++dest.in_flight;
  const auto platform = static_cast<size_t>(dest.platform);
  ++platform_in_flight_[platform];
  Tenant& tenant = tenants_[dest.tenant];
  if (tenant.in_flight[platform]++ == 0 && tenant.ready[platform].empty()) {
    ++platform_tenants_[platform];
  }
  if (dest.head_ordering != 0) {
    std::vector<HeldKey>& held = held_[d];
    auto it = std::find_if(held.begin(), held.end(),
                           [&](const HeldKey& h) { return h.ordering == dest.head_ordering; });
    if (it != held.end()) {
      it->retrying = false;
    } else {
      held.push_back(HeldKey{dest.head_ordering, dest.head_sequence, false});
    }
  }
  if (dest.platform == Platform::kLine || !adaptive_.empty()) {
    CountRecent(dest, false, ToNanos(clock_.Now()));
  }
  if (!adaptive_.empty()) {
    DispatchCanary(dest, d);
  }
  if (dest.startup_window) {
    StartupSent(dest);
  }
  if (!shadow_.empty()) {
    MeterShadow(d, ToNanos(clock_.Now()));
  }
  decision.kind = Decision::Kind::kDispatch;
  decision.destination = DestinationId{d};
  if (static_cast<IdForm>(dest.head_form) == IdForm::kLong) {
    auto it = long_ids_.find(d);
    decision.delivery_id = std::move(it->second);
    long_ids_.erase(it);
  } else {
    decision.delivery_id = dest.head_id.Unpack(static_cast<IdForm>(dest.head_form));
  }
  dest.head_form = static_cast<uint8_t>(IdForm::kNone);
  decision.sequence = dest.head_sequence;
  dest.has_head = false;
  dest.reason = DeferReason::kNone;
}

void Scheduler::ClearHeadId(uint32_t d) {
  Dest& dest = dests_[d];
  if (static_cast<IdForm>(dest.head_form) == IdForm::kLong) {
    long_ids_.erase(d);
  }
  dest.head_form = static_cast<uint8_t>(IdForm::kNone);
}

void Scheduler::RekeyDiscord(uint32_t d) {
  auto it = discord_.find(d);
  if (it == discord_.end() || it->second.epoch == discord_epoch_) {
    return;
  }
  it->second.epoch = discord_epoch_;
  auto bucket = discord_buckets_.find(it->second.route);
  const ScopeKey base = bucket == discord_buckets_.end() ? it->second.route : bucket->second;
  const ScopeKey leaf = DiscordLeafKey(base, it->second.major);
  Dest& dest = dests_[d];
  const uint32_t old_scope = dest.scopes[dest.leaf_index];
  if (scopes_.at(old_scope).key == leaf) {
    return;
  }
  const Budget old_budget = scopes_.budget(old_scope);
  const bool old_learned = scopes_.learned(old_scope);
  const uint32_t new_scope =
      scopes_.Acquire(leaf, BudgetName::kDiscordRoute, dest.tenant, old_budget);
  if (old_learned && !scopes_.learned(new_scope)) {
    scopes_.SetBudget(new_scope, old_budget, true);
    // A pace lowered by header-less 429s moves with its budget, so it can probe back up.
    if (auto node = adaptive_.extract(scopes_.at(old_scope).key); !node.empty()) {
      node.key() = leaf;
      adaptive_.insert(std::move(node));
    }
  }
  ReleaseScope(old_scope);
  dest.scopes[dest.leaf_index] = new_scope;
  AdoptPendingShared(new_scope);
}

void Scheduler::ReleaseOrdering(uint32_t d, uint64_t sequence, bool retrying) {
  auto it = held_.find(d);
  if (it == held_.end()) {
    return;
  }
  std::vector<HeldKey>& held = it->second;
  for (size_t i = 0; i < held.size(); ++i) {
    if (held[i].sequence != sequence) {
      continue;
    }
    if (retrying) {
      held[i].retrying = true;
    } else {
      held.erase(held.begin() + static_cast<ptrdiff_t>(i));
    }
    break;
  }
  if (held.empty()) {
    held_.erase(it);
  }
}

SteadyTime Scheduler::DepartAt(DestinationId id, SteadyTime let_go, int64_t cost) {
  const SteadyTime now = clock_.Now();
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return now;
  }
  const Dest& dest = **found;
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  if (!stated_.empty() && stated_.contains(key)) {
    return now;
  }
  // The platform's own interval: what the margin adds (clamped as the meters clamp it) is the
  // room lateness has.
  const auto interval = static_cast<int64_t>(static_cast<double>(scopes_.params(leaf).interval_ns) /
                                             (1.0 + std::clamp(options_.pacing_margin, 0.0, 0.5)));
  const int64_t now_ns = ToNanos(now);
  const int64_t let_go_ns = ToNanos(let_go);
  Departure& last = departed_[key];
  int64_t at_ns = now_ns;
  if (last.until_ns > now_ns) {
    // As far apart as the meters let the two go (either way round: the destinations sharing a
    // key may send out of order), up to the last one's units (a burst may leave together).
    const int64_t apart = std::min(
        let_go_ns > last.let_go_ns ? let_go_ns - last.let_go_ns : last.let_go_ns - let_go_ns,
        last.until_ns - last.left_ns);
    // Under a millisecond early goes at once: a timer would cost more than the send risks.
    if (SatAdd(last.left_ns, apart) - now_ns >= 1'000'000) {
      at_ns = SatAdd(last.left_ns, apart);
    }
  }
  // The latest so far: a send that goes at once beside one still held does not move it back.
  last = Departure{
      .let_go_ns = std::max(last.let_go_ns, let_go_ns),
      .left_ns = std::max(last.left_ns, at_ns),
      .until_ns = std::max(
          last.until_ns, SatAdd(at_ns, SatMul(std::clamp<int64_t>(cost, 1, 1'000'000), interval)))};
  return FromNanos(at_ns);
}

void Scheduler::ParkScope(const Dest& dest, uint8_t index, Millis wait, ParkKind kind) {
  const ScopeKey key = scopes_.at(dest.scopes[index]).key;
  Status status = store_.Park(key, clock_.Now() + std::max(Millis(0), wait), kind);
  // A park that cannot be stored only costs a 429 more; the next response parks again.
  status.IgnoreError();
}

Status Scheduler::Observe(DestinationId id, const RateLimitObservation& observation) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  Dest& dest = **found;
  dest.headers_seen = observation.retry_after.has_value() || observation.limit.has_value() ||
                      observation.remaining.has_value() || observation.reset_after.has_value();
  if (dest.platform == Platform::kDiscord && !observation.bucket.empty()) {
    const ScopeKey credential = scopes_.at(dest.scopes[dest.credential_index]).key;
    const ScopeKey bucket = DiscordBucketKey(credential, observation.bucket);
    const ScopeKey route = discord_[id.value].route;
    ScopeKey& mapped = discord_buckets_[route];
    if (mapped != bucket) {
      mapped = bucket;
      ++discord_epoch_;
      if (share_ != nullptr) {
        LearnedUpdate update;
        update.kind = LearnedUpdate::Kind::kDiscordBucket;
        update.key = route;
        update.bucket = bucket;
        share_->Publish(update);
      }
    }
    if (dest.state != State::kScopeWait) {
      RekeyDiscord(id.value);
    }
  }
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const Budget budget_before = scopes_.budget(leaf);
  const bool learned_before = scopes_.learned(leaf);
  if (observation.limit.has_value() && *observation.limit > 0) {
    Budget learned = scopes_.budget(leaf);
    // What a platform sends is hostile too: held to a budget's range (kMaxBudget*).
    learned.limit = std::min(*observation.limit, kMaxBudgetLimit);
    learned.burst = 1;
    if (observation.window.has_value() && observation.window->count() > 0) {
      learned.scale_ms = std::min<int64_t>(observation.window->count(), kMaxBudgetScaleMs);
    }
    scopes_.SetBudget(leaf, learned, true);
    adaptive_.erase(scopes_.at(leaf).key);  // the platform said what the limit is
  }
  FollowStatedWindow(dest, observation);
  if (scopes_.learned(leaf) != learned_before || !(scopes_.budget(leaf) == budget_before)) {
    ShareLeaf(leaf);
  }
  const bool global = observation.global || observation.scope == RateLimitScope::kGlobal;
  if (observation.retry_after.has_value()) {
    const uint8_t index = global ? dest.credential_index : ParkIndex(dest);
    ParkScope(dest, index, *observation.retry_after, ParkKind::kRetryAfter);
  } else if (observation.remaining == 0 && observation.reset_after.has_value()) {
    ParkScope(dest, dest.leaf_index, *observation.reset_after + options_.reset_offset,
              ParkKind::kRemainingZero);
  }
  return Status::Ok();
}

Verdict Scheduler::ApplyRetryBudget(Verdict verdict, SteadyTime now) {
  const GcraParams params = GcraParams::FromBudget(options_.retry_budget);
  const GcraDecision decision = GcraEvaluate(retry_tat_ns_, params, 1, ToNanos(now));
  if (decision.allowed) {
    retry_tat_ns_ = decision.tat_ns;
    return verdict;
  }
  verdict.next_attempt = std::max(verdict.next_attempt, now + decision.retry_after);
  verdict.deferral.reason = DeferReason::kRetryBudget;
  verdict.deferral.until = verdict.next_attempt;
  return verdict;
}

Result<Verdict> Scheduler::OnOutcome(DestinationId id, uint64_t sequence,
                                     const DeliveryOutcome& outcome, const AttemptInfo& info) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  Dest& dest = **found;
  if (dest.in_flight == 0) {
    return Status::FailedPrecondition("no delivery in flight for this destination");
  }
  const bool headers_seen = dest.headers_seen;
  dest.headers_seen = false;
  const auto platform = static_cast<size_t>(dest.platform);
  const RetryPolicy& policy = options_.retry[platform];
  const SteadyTime now = clock_.Now();
  Verdict verdict = PlanRetry(policy, outcome, info, now, clock_.WallNow(), random_);
  if (verdict.outcome_class == OutcomeClass::kRetry && verdict.kind == VerdictKind::kDefer) {
    verdict = ApplyRetryBudget(std::move(verdict), now);
  }
  if (dest.startup_window) {
    StartupAnswered(dest, verdict.outcome_class == OutcomeClass::kDelivered,
                    verdict.outcome_class == OutcomeClass::kBudgetExhausted);
  }
  const bool probed = dest.shape_probe;
  if (probed) {
    EndShapeProbe(id.value, verdict.outcome_class == OutcomeClass::kDelivered,
                  verdict.outcome_class == OutcomeClass::kBudgetExhausted);
  }
  if (verdict.outcome_class == OutcomeClass::kBudgetExhausted) {
    if (outcome.retry_after.has_value() || headers_seen) {
      ParkScope(dest, ParkIndex(dest), outcome.retry_after.value_or(policy.throttle_wait),
                ParkKind::kRetryAfter);
      if (outcome.retry_after.has_value() && !probed) {
        LearnBurst(dest);
      }
      if (!adaptive_.empty()) {
        CanaryLost(dest, id.value, sequence);  // the headers pace the key
      }
    } else {
      verdict = AdaptToThrottle(dest, id.value, sequence, std::move(verdict), policy.throttle_wait);
    }
  } else if (verdict.outcome_class == OutcomeClass::kDelivered) {
    if (dest.platform == Platform::kLine || !adaptive_.empty()) {
      CountRecent(dest, true, ToNanos(now));
    }
    if (AdaptToSuccess(dest, id.value, sequence) && dest.state == State::kTimer &&
        dest.reason == DeferReason::kBudget) {
      // Its next head waits on its own timer for the old pace (a key of one destination has
      // no wait list for RepaceScope to look at again).
      MakeReady(id.value);
    }
  } else if (!adaptive_.empty()) {
    CanaryLost(dest, id.value, sequence);
  }
  --dest.in_flight;
  --platform_in_flight_[platform];
  Tenant& tenant = tenants_[dest.tenant];
  if (--tenant.in_flight[platform] == 0 && tenant.ready[platform].empty()) {
    --platform_tenants_[platform];
  }
  conns_.Give(dest.origin, dest.tenant);
  ApplyGrants();
  ReleaseOrdering(id.value, sequence, verdict.kind == VerdictKind::kDefer);
  if (dest.state == State::kBlocked) {
    MakeReady(id.value);
  }
  return verdict;
}

void Scheduler::ReleaseScope(uint32_t scope) {
  const ScopeKey key = scopes_.at(scope).key;
  scopes_.Release(scope);
  if (scopes_.at(scope).refs == 0) {
    adaptive_.erase(key);
    recent_.erase(key);
    stated_.erase(key);
    windows_.erase(key);
    startup_.erase(key);
    departed_.erase(key);
  }
}

}  // namespace egress::pacing
