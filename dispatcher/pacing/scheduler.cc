#include "dispatcher/pacing/scheduler.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "dispatcher/base/check.h"

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

}  // namespace

Scheduler::Scheduler(const Clock& clock, BudgetStore& store, Random& random,
                     SchedulerOptions options)
    : clock_(clock),
      store_(store),
      random_(random),
      options_(std::move(options)),
      conns_(options_.connections) {
  scopes_.set_margin(std::clamp(options_.pacing_margin, 0.0, 0.5));
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
  Result<ScopePath> path = BuildScopePath(spec);
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
  dest.head_not_before_ns = ToNanos(item.not_before);
  dest.head_wait_reason = item.wait_reason;
  dest.has_head = true;
  if (dest.state == State::kEmpty || dest.state == State::kTimer || dest.state == State::kBlocked) {
    ++dest.generation;
    MakeReady(id.value);
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

void Scheduler::PushBack(Fifo& fifo, uint32_t d) {
  dests_[d].link = kNil;
  if (fifo.tail == kNil) {
    fifo.head = d;
  } else {
    dests_[fifo.tail].link = d;
  }
  fifo.tail = d;
}

uint32_t Scheduler::PopFront(Fifo& fifo) {
  const uint32_t d = fifo.head;
  EGRESS_CHECK(d != kNil);
  fifo.head = dests_[d].link;
  if (fifo.head == kNil) {
    fifo.tail = kNil;
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
  if (tenant.ready[p].head == kNil && tenant.in_flight[p] == 0) {
    ++platform_tenants_[p];
  }
  PushBack(tenant.ready[p], d);
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
  if (slot.wait_head == kNil) {
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
  Fifo fifo{slot.wait_head, slot.wait_tail};
  while (release-- > 0 && fifo.head != kNil) {
    MakeReady(PopFront(fifo));
  }
  slot.wait_head = fifo.head;
  slot.wait_tail = fifo.tail;
  if (fifo.head != kNil) {
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
  for (int i = 0; i < kPlatformCount; ++i) {
    const int p = (tenant.next_platform + i) % kPlatformCount;
    const Fifo& fifo = tenant.ready[p];
    if (fifo.head == kNil) {
      continue;
    }
    any = true;
    if (platform_in_flight_[p] >= options_.max_in_flight_per_platform[p]) {
      dests_[fifo.head].reason = DeferReason::kPlatformConcurrency;
      continue;
    }
    if (tenant.in_flight[p] >= TenantCap(tenant, p)) {
      dests_[fifo.head].reason = DeferReason::kTenantConcurrency;
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
    const Dest& front = dests_[tenant.ready[p].head];
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
    tenant.next_platform = static_cast<uint8_t>((p + 1) % kPlatformCount);
    const uint32_t d = PopFront(tenant.ready[p]);
    if (tenant.ready[p].head == kNil && tenant.in_flight[p] == 0) {
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
  if (!dest.has_head) {
    return false;
  }
  if (dest.disabled) {
    dest.state = State::kDisabled;
    dest.reason = DeferReason::kDestinationDisabled;
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
  if (dest.platform == Platform::kDiscord && !windows_.empty()) {
    const uint32_t global = dest.scopes[dest.credential_index];
    auto it = windows_.find(scopes_.at(global).key);
    if (it != windows_.end()) {
      const int64_t next_ns = it->second.NextAllowed(now_ns);
      if (next_ns > now_ns) {
        TakeResult full;
        full.denied_index = dest.credential_index;
        full.retry_after = Nanos(next_ns - now_ns);
        Deny(d, full, now_ns);
        return false;
      }
    }
  }
  if (!granted && !conns_.HasRoom(dest.origin, dest.tenant)) {
    dest.state = State::kConnWait;
    dest.reason = DeferReason::kConnections;
    conns_.Wait(dest.origin, dest.tenant, tenants_[dest.tenant].weight, d, dest.conn_first);
    dest.conn_first = false;
    ApplyGrants();
    return false;
  }
  if (discord_epoch_ != 0 && dest.platform == Platform::kDiscord) {
    RekeyDiscord(d);
  }
  std::array<Charge, kMaxScopes> charges;
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    const uint32_t scope = dest.scopes[i];
    charges[i] = Charge{scopes_.at(scope).key, scopes_.params(scope), dest.head_cost};
  }
  Result<TakeResult> taken =
      store_.TakeAll(std::span<const Charge>(charges.data(), dest.scope_count), FromNanos(now_ns));
  if (!taken.has_value()) {
    ArmTimer(d, now_ns + Nanos(options_.store_retry).count(), DeferReason::kStoreUnavailable);
    return false;
  }
  if (!taken->allowed) {
    Deny(d, *taken, now_ns);
    return false;
  }
  conns_.Take(dest.origin, dest.tenant, granted);
  dest.conn_first = false;
  if (dest.platform == Platform::kDiscord) {
    const uint32_t global = dest.scopes[dest.credential_index];
    if (Windowed(global)) {
      const Budget& budget = scopes_.budget(global);
      windows_
          .try_emplace(scopes_.at(global).key, budget.limit,
                       budget.scale_ms * 1'000'000 + Nanos(options_.global_window_offset).count())
          .first->second.Record(now_ns);
    }
  }
  DispatchHead(d, decision);
  return true;
}

void Scheduler::ApplyGrants() {
  for (const uint32_t d : conns_.TakeGrants()) {
    Dest& dest = dests_[d];
    dest.conn_grant = true;
    if (dest.state == State::kConnWait) {
      MakeReady(d);
    } else {
      // Left the wait some other way meanwhile (it cannot: a waiter stays until granted); keep
      // the books straight all the same.
      dest.conn_grant = false;
      conns_.Return(dest.origin, dest.tenant);
    }
  }
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

void Scheduler::Deny(uint32_t d, const TakeResult& result, int64_t now_ns) {
  Dest& dest = dests_[d];
  const uint32_t scope = dest.scopes[result.denied_index];
  ScopeTable::Slot& slot = scopes_.at(scope);
  DeferReason reason = DeferReason::kBudget;
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
  Fifo fifo{slot.wait_head, slot.wait_tail};
  PushBack(fifo, d);
  slot.wait_head = fifo.head;
  slot.wait_tail = fifo.tail;
  ArmScope(scope, at_ns);
}

void Scheduler::DispatchHead(uint32_t d, Decision& decision) {
  Dest& dest = dests_[d];
  ++dest.in_flight;
  const auto platform = static_cast<size_t>(dest.platform);
  ++platform_in_flight_[platform];
  Tenant& tenant = tenants_[dest.tenant];
  if (tenant.in_flight[platform]++ == 0 && tenant.ready[platform].head == kNil) {
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
    ScopeKey& mapped = discord_buckets_[discord_[id.value].route];
    if (mapped != bucket) {
      mapped = bucket;
      ++discord_epoch_;
    }
    if (dest.state != State::kScopeWait) {
      RekeyDiscord(id.value);
    }
  }
  if (observation.limit.has_value() && *observation.limit > 0) {
    const uint32_t leaf = dest.scopes[dest.leaf_index];
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
  const bool global = observation.global || observation.scope == RateLimitScope::kGlobal;
  if (observation.retry_after.has_value()) {
    const uint8_t index = global ? dest.credential_index : dest.retry_after_index;
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
  if (verdict.outcome_class == OutcomeClass::kBudgetExhausted) {
    if (outcome.retry_after.has_value() || headers_seen) {
      ParkScope(dest, dest.retry_after_index, outcome.retry_after.value_or(policy.throttle_wait),
                ParkKind::kRetryAfter);
      if (outcome.retry_after.has_value()) {
        LearnBurst(dest);
      }
    } else {
      verdict = AdaptToThrottle(dest, std::move(verdict), policy.throttle_wait);
    }
  } else if (verdict.outcome_class == OutcomeClass::kDelivered) {
    if (dest.platform == Platform::kLine || !adaptive_.empty()) {
      CountRecent(dest, true, ToNanos(now));
    }
    AdaptToSuccess(dest);
  }
  --dest.in_flight;
  --platform_in_flight_[platform];
  Tenant& tenant = tenants_[dest.tenant];
  if (--tenant.in_flight[platform] == 0 && tenant.ready[platform].head == kNil) {
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

Verdict Scheduler::AdaptToThrottle(const Dest& dest, Verdict verdict, Millis throttle_wait) {
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  auto it = adaptive_.find(key);
  if (it == adaptive_.end()) {
    it = adaptive_.try_emplace(key, options_.adaptive, scopes_.budget(leaf), scopes_.learned(leaf))
             .first;
  }
  AdaptivePace& pace = it->second;
  const SteadyTime now = clock_.Now();
  if (pace.OnThrottle(ToNanos(now), Recent(key, ToNanos(now)))) {
    const Millis park = pace.Park(throttle_wait, random_.Next(), ToNanos(now));
    ParkScope(dest, dest.retry_after_index, park, ParkKind::kRetryAfter);
  }
  scopes_.SetBudget(leaf, pace.Current(), true);
  // A 429 held off by the park waits for that park, not a new one from now.
  verdict.next_attempt = FromNanos(pace.hold_until_ns());
  verdict.deferral.until = verdict.next_attempt;
  return verdict;
}

void Scheduler::AdaptToSuccess(const Dest& dest) {
  if (adaptive_.empty()) {
    return;
  }
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  auto it = adaptive_.find(key);
  if (it == adaptive_.end()) {
    return;
  }
  const int64_t now_ns = ToNanos(clock_.Now());
  if (!it->second.OnSuccess(now_ns, Recent(key, now_ns))) {
    return;
  }
  if (it->second.at_ceiling()) {
    scopes_.SetBudget(leaf, it->second.ceiling(), it->second.ceiling_learned());
    adaptive_.erase(it);
    return;
  }
  scopes_.SetBudget(leaf, it->second.Current(), true);
}

RecentWindow Scheduler::Recent(ScopeKey key, int64_t now_ns) const {
  auto it = recent_.find(key);
  if (it == recent_.end()) {
    return {};
  }
  const RecentCounts& c = it->second;
  const int64_t age = now_ns - c.start_ns;
  if (age >= 2 * c.window_ns) {
    return RecentWindow{0, 0};
  }
  if (age >= c.window_ns) {
    // The current bucket is the one before now; weigh it by the part still in the window.
    const double share = 1.0 - static_cast<double>(age - c.window_ns) / c.window_ns;
    return RecentWindow{static_cast<int64_t>(std::ceil(c.sent * share)),
                        static_cast<int64_t>(std::floor(c.delivered * share))};
  }
  // Sliding estimate: the current bucket and the part of the one before still in the window.
  const double before = 1.0 - static_cast<double>(age) / c.window_ns;
  return RecentWindow{c.sent + static_cast<int64_t>(std::ceil(c.sent_before * before)),
                      c.delivered + static_cast<int64_t>(std::floor(c.delivered_before * before)),
                      now_ns - c.since_ns < c.window_ns};
}

void Scheduler::CountRecent(const Dest& dest, bool delivered, int64_t now_ns) {
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  if (dest.platform != Platform::kLine && !adaptive_.contains(key)) {
    return;
  }
  RecentCounts& c = recent_[key];
  const int64_t window_ns = std::max<int64_t>(1, scopes_.budget(leaf).scale_ms) * 1'000'000;
  if (c.window_ns != window_ns || now_ns - c.start_ns >= 2 * window_ns) {
    c = RecentCounts{now_ns, window_ns, now_ns};
  } else if (now_ns - c.start_ns >= window_ns) {
    c.sent_before = c.sent;
    c.delivered_before = c.delivered;
    c.sent = 0;
    c.delivered = 0;
    c.start_ns += window_ns;
  }
  if (delivered) {
    c.delivered = std::min(c.delivered + 1, INT32_MAX - 1);
  } else {
    c.sent = std::min(c.sent + 1, INT32_MAX - 1);
  }
}

void Scheduler::LearnBurst(const Dest& dest) {
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  Budget budget = scopes_.budget(leaf);
  if (budget.burst <= 1 || stated_.contains(key)) {
    return;
  }
  // The platform refused a request the burst allowed: its burst is smaller, and its bucket is
  // empty now. A learned budget: overrides of the configured one no longer apply to this key.
  budget.burst -= 1;
  scopes_.SetBudget(leaf, budget, true);
  if (auto it = adaptive_.find(key); it != adaptive_.end()) {
    Budget ceiling = it->second.ceiling();
    ceiling.burst = std::min(ceiling.burst, budget.burst);
    it->second.SetCeiling(ceiling);
  }
  store_.Sync(key, scopes_.params(leaf), 0, clock_.Now()).IgnoreError();
}

void Scheduler::FollowStatedWindow(Dest& dest, const RateLimitObservation& observation) {
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  const bool stated = observation.limit.has_value() && *observation.limit > 0 &&
                      observation.remaining.has_value() && observation.reset_after.has_value();
  if (!stated) {
    if (stated_.empty()) {
      return;
    }
    auto it = stated_.find(key);
    if (it == stated_.end() || observation.retry_after.has_value()) {
      return;
    }
    // The headers went away: back to the leaky bucket (burst 1) at the learned rate.
    Budget budget = scopes_.budget(leaf);
    budget.burst = 1;
    stated_.erase(it);
    scopes_.SetBudget(leaf, budget, true);
    return;
  }
  if (observation.retry_after.has_value()) {
    return;  // a 429: its park decides
  }
  // The stated window: burst up to the limit, and exactly `remaining` units left now; the
  // meter refills at limit per window, and remaining 0 parks the key until the reset (Observe).
  Budget budget = scopes_.budget(leaf);
  budget.burst = std::clamp<int64_t>(budget.limit, 1, kMaxBudgetBurst);
  scopes_.SetBudget(leaf, budget, true);
  stated_[key] = budget;
  store_.Sync(key, scopes_.params(leaf), std::max<int64_t>(0, *observation.remaining), clock_.Now())
      .IgnoreError();
}

void Scheduler::ReleaseScope(uint32_t scope) {
  const ScopeKey key = scopes_.at(scope).key;
  scopes_.Release(scope);
  if (scopes_.at(scope).refs == 0) {
    adaptive_.erase(key);
    recent_.erase(key);
    stated_.erase(key);
    windows_.erase(key);
  }
}

Budget Scheduler::Shape(BudgetName name, Budget budget) const {
  if (name == BudgetName::kDiscordGlobal && options_.discord_global_window &&
      budget.limit <= SlidingWindow::kMaxLimit) {
    // Twice the limit: the meter (paced under the margin) never holds a run of windows back,
    // and over a long run it still paces at the limit less the margin.
    budget.burst = std::min<int64_t>(2 * budget.limit, kMaxBudgetBurst);
  }
  return budget;
}

bool Scheduler::Windowed(uint32_t scope) const {
  return scopes_.name(scope) == BudgetName::kDiscordGlobal && options_.discord_global_window &&
         scopes_.budget(scope).limit <= SlidingWindow::kMaxLimit;
}

Status Scheduler::Disable(DestinationId id, std::string reason) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  Dest& dest = **found;
  dest.disabled = true;
  disabled_reasons_[id.value] = std::move(reason);
  if (dest.state == State::kTimer || dest.state == State::kBlocked) {
    ++dest.generation;
    dest.state = State::kDisabled;
    dest.reason = DeferReason::kDestinationDisabled;
  }
  return Status::Ok();
}

Status Scheduler::Enable(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  Dest& dest = **found;
  dest.disabled = false;
  disabled_reasons_.erase(id.value);
  if (dest.state == State::kDisabled) {
    if (dest.has_head) {
      MakeReady(id.value);
    } else {
      dest.state = State::kEmpty;
    }
  }
  return Status::Ok();
}

Status Scheduler::SetTenantBudgets(const std::string& tenant,
                                   const std::vector<std::pair<BudgetName, Budget>>& overrides) {
  Status status = budgets_.SetOverrides(tenant, overrides);
  if (!status.ok()) {
    return status;
  }
  ApplyBudgets(TenantIndex(tenant));
  return Status::Ok();
}

Status Scheduler::SetDefaultBudgets(const std::vector<std::pair<BudgetName, Budget>>& defaults) {
  for (const auto& [name, budget] : defaults) {
    if (budget.limit <= 0 || budget.scale_ms <= 0 || budget.burst <= 0) {
      return Status::InvalidArgument(fmt::format(
          "budget {}: limit, scale_ms and burst must be positive", BudgetNameString(name)));
    }
  }
  for (const auto& [name, budget] : defaults) {
    if (Status status = budgets_.SetDefault(name, budget); !status.ok()) {
      return status;
    }
  }
  ApplyBudgets(std::nullopt);
  return Status::Ok();
}

void Scheduler::ApplyBudgets(std::optional<uint32_t> tenant) {
  const SteadyTime now = clock_.Now();
  std::vector<bool> repaced(scopes_.slot_limit(), false);
  for (uint32_t i = 0; i < scopes_.slot_limit(); ++i) {
    const ScopeTable::Slot& slot = scopes_.at(i);
    if (slot.refs == 0 || (tenant.has_value() && slot.tenant != *tenant)) {
      continue;
    }
    const Budget effective =
        Shape(scopes_.name(i), budgets_.Effective(tenants_[slot.tenant].name, scopes_.name(i)));
    if (slot.learned == 0) {
      const GcraParams before = scopes_.params(i);
      scopes_.SetBudget(i, effective, false);
      repaced[i] = RepaceScope(i, before, now);
      continue;
    }
    // A pace lowered under a configured budget follows the new one as its ceiling.
    auto it = adaptive_.find(slot.key);
    if (it != adaptive_.end() && !it->second.ceiling_learned()) {
      it->second.SetCeiling(effective);
      const GcraParams before = scopes_.params(i);
      if (it->second.at_ceiling()) {
        scopes_.SetBudget(i, effective, false);
        adaptive_.erase(it);
      } else {
        scopes_.SetBudget(i, it->second.Current(), true);
      }
      repaced[i] = RepaceScope(i, before, now);
    }
  }
  // A scope with one destination holds it on that destination's own timer, not a wait list.
  for (uint32_t d = 0; d < dests_.size(); ++d) {
    const Dest& dest = dests_[d];
    if ((tenant.has_value() && dest.tenant != *tenant) || dest.state != State::kTimer ||
        dest.reason != DeferReason::kBudget) {
      continue;
    }
    for (uint8_t k = 0; k < dest.scope_count; ++k) {
      if (repaced[dest.scopes[k]]) {
        MakeReady(d);
        break;
      }
    }
  }
}

bool Scheduler::RepaceScope(uint32_t scope, const GcraParams& before, SteadyTime now) {
  const GcraParams& after = scopes_.params(scope);
  if (after == before) {
    return false;
  }
  // A store that cannot be reached keeps the old debt; the next charge paces at the new rate.
  store_.Rescale(scopes_.at(scope).key, before, after, now).IgnoreError();
  if (scopes_.at(scope).wait_head != kNil) {
    ArmScope(scope, ToNanos(now));  // its waiters are looked at again on the next Next()
  }
  return true;
}

Status Scheduler::SetTenantWeight(const std::string& tenant, uint32_t weight) {
  if (weight == 0) {
    return Status::InvalidArgument("tenant weight must be > 0");
  }
  tenants_[TenantIndex(tenant)].weight = weight;
  return Status::Ok();
}

Status Scheduler::SetTenantMaxInFlight(const std::string& tenant, int max_in_flight) {
  if (max_in_flight < 0) {
    return Status::InvalidArgument("tenant max_in_flight must be >= 0");
  }
  tenants_[TenantIndex(tenant)].max_in_flight = max_in_flight;
  return Status::Ok();
}

Status Scheduler::SetMultiplexed(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  conns_.SetMultiplexed((*found)->origin);
  ApplyGrants();
  return Status::Ok();
}

bool Scheduler::StartSend(DestinationId id, uint64_t token) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return true;  // not scheduled here: nothing to count
  }
  const Dest& dest = **found;
  const bool sent = conns_.StartSend(dest.origin, dest.tenant, tenants_[dest.tenant].weight, token);
  if (!kept_.empty()) {
    std::erase_if(kept_, [&](const KeptConnection& k) {
      return k.origin == dest.origin && k.tenant == dest.tenant &&
             conns_.kept(k.origin, k.tenant) == 0;
    });
  }
  return sent;
}

void Scheduler::EndSend(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return;
  }
  const Dest& dest = **found;
  const int64_t keep_ns = Nanos(options_.connection_keep).count();
  if (dest.origin == ConnectionBudget::kNoOrigin || keep_ns <= 0 || !dest.has_head) {
    conns_.EndSend(dest.origin, dest.tenant);
    return;
  }
  // When is its next head due? Ready or held by an outcome: at once; on a timer: then.
  const int64_t now_ns = ToNanos(clock_.Now());
  int64_t due_ns = INT64_MAX;
  if (dest.state == State::kReady || dest.state == State::kBlocked ||
      dest.state == State::kConnWait) {
    due_ns = now_ns;
  } else if (dest.state == State::kTimer || dest.state == State::kScopeWait) {
    due_ns = std::max(now_ns, dest.until_ns);
  }
  if (due_ns - now_ns > keep_ns) {
    conns_.EndSend(dest.origin, dest.tenant);
    return;
  }
  if (!conns_.Keep(dest.origin, dest.tenant)) {
    return;  // not kept: ended as by EndSend
  }
  for (KeptConnection& k : kept_) {
    if (k.origin == dest.origin && k.tenant == dest.tenant) {
      k.until_ns = std::max(k.until_ns, due_ns + keep_ns);
      return;
    }
  }
  kept_.push_back(KeptConnection{dest.origin, dest.tenant, due_ns + keep_ns});
}

void Scheduler::ExpireKept(int64_t now_ns) {
  std::erase_if(kept_, [&](const KeptConnection& k) {
    if (k.until_ns > now_ns && conns_.kept(k.origin, k.tenant) > 0) {
      return false;
    }
    conns_.Unkeep(k.origin, k.tenant);
    return true;
  });
}

std::vector<uint64_t> Scheduler::TakeSendGrants() { return conns_.TakeSendGrants(); }

Result<DestinationView> Scheduler::Inspect(DestinationId id) const {
  Result<const Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  const Dest& dest = **found;
  DestinationView view;
  view.has_head = dest.has_head;
  view.in_flight = dest.in_flight;
  view.disabled = dest.disabled;
  if (dest.origin != ConnectionBudget::kNoOrigin) {
    view.origin_in_flight = conns_.sending(dest.origin);
    view.origin_waiting = static_cast<int64_t>(conns_.waiting_to_send(dest.origin));
    view.origin_capacity = std::min<int64_t>(conns_.capacity(dest.origin), INT32_MAX);
  }
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  view.budget_name = scopes_.name(leaf);
  view.budget = scopes_.budget(leaf);
  view.budget_learned = scopes_.learned(leaf);
  if (auto meter = store_.Inspect(scopes_.at(leaf).key, scopes_.params(leaf), clock_.Now())) {
    view.remaining = meter->remaining;
  }
  if (auto it = disabled_reasons_.find(id.value); it != disabled_reasons_.end()) {
    view.disabled_reason = it->second;
  }
  if (!adaptive_.empty()) {
    const uint32_t leaf = dest.scopes[dest.leaf_index];
    if (auto it = adaptive_.find(scopes_.at(leaf).key); it != adaptive_.end()) {
      view.adaptive = scopes_.budget(leaf);
      view.adaptive_probing = it->second.probing();
    }
  }
  view.stated_window = !stated_.empty() && stated_.contains(scopes_.at(leaf).key);
  if (!dest.has_head || dest.state == State::kEmpty) {
    return view;
  }
  if (dest.state == State::kReady) {
    if (dest.reason == DeferReason::kPlatformConcurrency ||
        dest.reason == DeferReason::kTenantConcurrency) {
      view.deferral.reason = dest.reason;
    }
    return view;
  }
  view.deferral.reason = dest.reason;
  if (dest.reason == DeferReason::kBudget || dest.reason == DeferReason::kRetryAfter ||
      dest.reason == DeferReason::kRemainingZero) {
    view.deferral.budget = dest.reason_budget;
  }
  if (dest.state == State::kTimer || dest.state == State::kScopeWait) {
    view.deferral.until = FromNanos(dest.until_ns);
  }
  if (dest.state == State::kDisabled) {
    view.deferral.detail = view.disabled_reason;
  }
  return view;
}

Result<Budget> Scheduler::EffectiveBudget(DestinationId id, BudgetName budget) const {
  Result<const Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  const Dest& dest = **found;
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    if (scopes_.name(dest.scopes[i]) == budget) {
      return scopes_.budget(dest.scopes[i]);
    }
  }
  return Status::NotFound(std::string(BudgetNameString(budget)) + " is not on the path");
}

Result<PathScopes> Scheduler::ScopesOf(DestinationId id) const {
  Result<const Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  const Dest& dest = **found;
  PathScopes out;
  for (uint8_t i = 0; i < dest.scope_count; ++i) {
    out.scopes[i] = {.name = scopes_.name(dest.scopes[i]),
                     .key = scopes_.at(dest.scopes[i]).key,
                     .budget = scopes_.budget(dest.scopes[i])};
  }
  out.size = dest.scope_count;
  return out;
}

size_t Scheduler::Sweep() {
  const int64_t now_ns = ToNanos(clock_.Now());
  std::erase_if(recent_, [&](const auto& entry) {
    return now_ns - entry.second.start_ns >= 2 * entry.second.window_ns;
  });
  std::erase_if(windows_, [&](const auto& entry) { return entry.second.Idle(now_ns); });
  return store_.Sweep(clock_.Now());
}

}  // namespace egress::pacing
