#include "dispatcher/pacing/connection_budget.h"

#include <algorithm>
#include <utility>

#include "dispatcher/base/check.h"

namespace egress::pacing {

bool ConnectionBudget::ByShare::operator()(const QueueKey& a, const QueueKey& b) const {
  // held / weight compared without division; both sides stay far below 2^63.
  const int64_t left = a.held * static_cast<int64_t>(b.weight);
  const int64_t right = b.held * static_cast<int64_t>(a.weight);
  if (left != right) {
    return left < right;
  }
  if (a.stamp != b.stamp) {
    return a.stamp < b.stamp;
  }
  return a.tenant < b.tenant;
}

ConnectionBudget::ConnectionBudget(ConnectionLimits limits) : limits_(limits) {
  limits_.streams = std::max<int64_t>(1, limits_.streams);
  limits_.ahead = std::max<int64_t>(0, limits_.ahead);
  if (limits_.total <= 1) {
    limits_.reserve = 0;
  } else if (limits_.reserve < 0) {
    limits_.reserve = std::max<int64_t>(1, limits_.total / 8);
  } else {
    limits_.reserve = std::min(limits_.reserve, limits_.total - 1);
  }
}

uint32_t ConnectionBudget::Acquire(std::string_view origin) {
  if (origin.empty() || (limits_.per_origin <= 0 && limits_.total <= 0)) {
    return kNoOrigin;
  }
  auto it = index_.find(std::string(origin));
  if (it == index_.end()) {
    uint32_t o;
    if (free_.empty()) {
      o = static_cast<uint32_t>(origins_.size());
      origins_.emplace_back();
    } else {
      o = free_.back();
      free_.pop_back();
    }
    origins_[o] = Origin{};
    origins_[o].name = std::string(origin);
    it = index_.emplace(origins_[o].name, o).first;
  }
  ++origins_[it->second].refs;
  return it->second;
}

void ConnectionBudget::Release(uint32_t origin) {
  if (origin == kNoOrigin) {
    return;
  }
  Origin& o = origins_[origin];
  EGRESS_CHECK(o.refs > 0);
  --o.refs;
  MaybeForget(origin);
}

void ConnectionBudget::MaybeForget(uint32_t origin) {
  Origin& o = origins_[origin];
  if (o.refs != 0 || o.in_flight != 0 || o.granted != 0 || o.sending != 0 || o.waiters != 0 ||
      o.send_waiters != 0 || o.queued_for_total) {
    return;
  }
  index_.erase(o.name);
  o = Origin{};
  free_.push_back(origin);
}

void ConnectionBudget::MaybeForgetTenant(Origin& o, uint32_t tenant) {
  auto it = o.tenants.find(tenant);
  if (it != o.tenants.end() && it->second.held == 0 && it->second.sending == 0 &&
      it->second.kept == 0 && it->second.dests.empty() && it->second.sends.empty()) {
    o.tenants.erase(it);
  }
}

int64_t ConnectionBudget::CapacityOf(const Origin& o) const {
  if (limits_.per_origin <= 0) {
    return INT64_MAX / 4;
  }
  return o.multiplexed ? limits_.per_origin * limits_.streams : limits_.per_origin;
}

int64_t ConnectionBudget::SlotCapacity(const Origin& o) const {
  return CapacityOf(o) + limits_.ahead;
}

int64_t ConnectionBudget::capacity(uint32_t origin) const {
  return origin == kNoOrigin ? INT64_MAX / 4 : CapacityOf(origins_[origin]);
}

int64_t ConnectionBudget::Connections(const Origin& o, int64_t requests) const {
  requests = std::min(requests, CapacityOf(o));
  if (!o.multiplexed) {
    return requests;
  }
  return (requests + limits_.streams - 1) / limits_.streams;
}

bool ConnectionBudget::Fits(const Origin& o) const {
  return o.in_flight + o.granted < SlotCapacity(o) && FitsTotal(o);
}

bool ConnectionBudget::FitsTotal(const Origin& o) const {
  if (limits_.total <= 0) {
    return true;
  }
  const int64_t used = o.in_flight + o.granted;
  return total_used_ - Connections(o, used) + Connections(o, used + 1) <= limits_.total;
}

bool ConnectionBudget::UnderShare(const Origin& o, uint32_t tenant) const {
  auto it = o.tenants.find(tenant);
  const int64_t held = it == o.tenants.end() ? 0 : it->second.held;
  const auto tenants = static_cast<int64_t>(o.tenants.size() + (it == o.tenants.end() ? 1 : 0));
  return held * tenants < CapacityOf(o);
}

int64_t ConnectionBudget::TenantConnections(const Origin& o, int64_t held) const {
  const int64_t requests = std::min(held, CapacityOf(o));
  return o.multiplexed ? (requests + limits_.streams - 1) / limits_.streams : requests;
}

bool ConnectionBudget::TenantFits(const Origin& o, uint32_t tenant) const {
  if (limits_.total <= 0) {
    return true;
  }
  auto here = o.tenants.find(tenant);
  const int64_t held = here == o.tenants.end() ? 0 : here->second.held;
  const int64_t more = TenantConnections(o, held + 1) - TenantConnections(o, held);
  const int64_t shared = limits_.total - limits_.reserve;
  if (more == 0 || total_used_ + more <= shared) {
    return true;  // no new connection, or room beyond the reserve
  }
  // Into the reserve: only while the tenant holds less than its weighted share of `shared` among
  // the tenants holding or waiting for connections (this one counted), so one under its share
  // always gets at least one.
  auto it = tenant_totals_.find(tenant);
  const int64_t conns = it == tenant_totals_.end() ? 0 : it->second.conns;
  const int64_t weight = it == tenant_totals_.end() ? 1 : it->second.weight;
  const bool active = it != tenant_totals_.end() && it->second.active;
  const int64_t weights = active_weight_ + (active ? 0 : weight);
  return conns * weights < shared * weight;
}

void ConnectionBudget::UpdateActive(TenantTotal& t) {
  const bool active = t.conns > 0 || t.waiting > 0;
  if (active != t.active) {
    active_weight_ += active ? t.weight : -static_cast<int64_t>(t.weight);
    t.active = active;
  }
}

void ConnectionBudget::Recount(const Origin& o, uint32_t tenant, Share& s) {
  const int64_t conns = TenantConnections(o, s.held);
  if (conns == s.conns) {
    return;
  }
  TenantTotal& t = tenant_totals_[tenant];
  t.conns += conns - s.conns;
  s.conns = conns;
  EGRESS_CHECK(t.conns >= 0);
  UpdateActive(t);
}

void ConnectionBudget::CountWaiting(uint32_t tenant, int delta) {
  TenantTotal& t = tenant_totals_[tenant];
  EGRESS_CHECK(delta >= 0 || t.waiting > 0);
  t.waiting = static_cast<size_t>(static_cast<int64_t>(t.waiting) + delta);
  UpdateActive(t);
}

void ConnectionBudget::SetWeight(uint32_t tenant, uint32_t weight) {
  TenantTotal& t = tenant_totals_[tenant];
  weight = std::max<uint32_t>(1, weight);
  if (t.active) {
    active_weight_ += static_cast<int64_t>(weight) - static_cast<int64_t>(t.weight);
  }
  t.weight = weight;
}

int64_t ConnectionBudget::tenant_connections(uint32_t tenant) const {
  auto it = tenant_totals_.find(tenant);
  return it == tenant_totals_.end() ? 0 : it->second.conns;
}

void ConnectionBudget::Count(Origin& o, int64_t in_flight_delta, int64_t granted_delta) {
  const int64_t before = Connections(o, o.in_flight + o.granted);
  o.in_flight += in_flight_delta;
  o.granted += granted_delta;
  EGRESS_CHECK(o.in_flight >= 0 && o.granted >= 0);
  total_used_ += Connections(o, o.in_flight + o.granted) - before;
}

void ConnectionBudget::Requeue(Origin& o, uint32_t tenant, Share& s, bool sends, bool served) {
  Queue& queue = sends ? o.send_queue : o.slot_queue;
  QueueKey& key = sends ? s.send_key : s.slot_key;
  const bool queued = sends ? !s.sends.empty() : !s.dests.empty();
  if (queue.erase(key) == 0 && !served) {
    key.stamp = ++stamp_;  // joins the queue: behind those waiting at its share
  }
  if (!queued) {
    return;
  }
  key.held = sends ? s.sending + s.kept : s.held;
  key.weight = s.weight;
  key.tenant = tenant;
  if (served) {
    key.stamp = ++stamp_;
  }
  queue.insert(key);
}

bool ConnectionBudget::HasRoom(uint32_t origin, uint32_t tenant) const {
  if (origin == kNoOrigin) {
    return true;
  }
  const Origin& o = origins_[origin];
  if (!TenantFits(o, tenant)) {
    return false;
  }
  if (UnderShare(o, tenant) && FitsTotal(o)) {
    return true;
  }
  if (o.waiters != 0 || !Fits(o)) {
    return false;
  }
  // Others waiting for the total come first when this request would open a connection.
  const int64_t used = o.in_flight + o.granted;
  return waiting_origins_.empty() || Connections(o, used + 1) == Connections(o, used);
}

void ConnectionBudget::Take(uint32_t origin, uint32_t tenant, bool granted) {
  if (origin == kNoOrigin) {
    return;
  }
  Origin& o = origins_[origin];
  if (granted) {
    Count(o, 1, -1);  // the same slot: no connection more or less
    return;
  }
  Count(o, 1, 0);
  Share& s = o.tenants[tenant];
  ++s.held;
  Recount(o, tenant, s);
  if (!s.dests.empty()) {
    Requeue(o, tenant, s, false, false);
  }
}

void ConnectionBudget::Give(uint32_t origin, uint32_t tenant) { Free(origin, tenant, -1, 0); }

void ConnectionBudget::Return(uint32_t origin, uint32_t tenant) { Free(origin, tenant, 0, -1); }

// Ends one of `tenant`'s holds at `origin` (a delivery in flight or a grant) and hands the room
// on.
void ConnectionBudget::Free(uint32_t origin, uint32_t tenant, int64_t in_flight_delta,
                            int64_t granted_delta) {
  if (origin == kNoOrigin) {
    return;
  }
  Origin& o = origins_[origin];
  Count(o, in_flight_delta, granted_delta);
  auto it = o.tenants.find(tenant);
  EGRESS_CHECK(it != o.tenants.end() && it->second.held > 0);
  --it->second.held;
  Recount(o, tenant, it->second);
  if (!it->second.dests.empty()) {
    Requeue(o, tenant, it->second, false, false);
  }
  MaybeForgetTenant(o, tenant);
  Grant(origin, true);
  MaybeForget(origin);
}

void ConnectionBudget::Wait(uint32_t origin, uint32_t tenant, uint32_t weight, uint32_t d,
                            Priority priority, bool first) {
  EGRESS_CHECK(origin != kNoOrigin);
  Origin& o = origins_[origin];
  Share& s = o.tenants[tenant];
  s.weight = std::max<uint32_t>(1, weight);
  SetWeight(tenant, weight);
  CountWaiting(tenant, 1);
  const bool joins = s.dests.empty();
  if (first) {
    s.dests.PushFront(d, priority);
  } else {
    s.dests.PushBack(d, priority);
  }
  if (joins || first) {
    o.slot_queue.erase(s.slot_key);
    s.slot_key = {
        .held = s.held, .weight = s.weight, .stamp = first ? 0 : ++stamp_, .tenant = tenant};
    o.slot_queue.insert(s.slot_key);
  }
  ++o.waiters;
  if (!o.queued_for_total && o.in_flight + o.granted < SlotCapacity(o)) {
    // Held back by the total, not by the origin's own slots.
    o.queued_for_total = true;
    waiting_origins_.push_back(origin);
  }
  // Room may have been left by a grant returned while nobody waited.
  Grant(origin, false);
}

void ConnectionBudget::Rewait(uint32_t origin, uint32_t tenant, uint32_t d, Priority priority) {
  if (origin == kNoOrigin) {
    return;
  }
  auto it = origins_[origin].tenants.find(tenant);
  if (it != origins_[origin].tenants.end()) {
    it->second.dests.Move(d, priority);
  }
}

void ConnectionBudget::SetMultiplexed(uint32_t origin) {
  if (origin == kNoOrigin || origins_[origin].multiplexed) {
    return;
  }
  Origin& o = origins_[origin];
  const int64_t before = Connections(o, o.in_flight + o.granted);
  o.multiplexed = true;
  total_used_ += Connections(o, o.in_flight + o.granted) - before;
  for (auto& [tenant, share] : o.tenants) {
    Recount(o, tenant, share);
  }
  GrantSends(o);
  Grant(origin, true);
}

bool ConnectionBudget::GrantOne(Origin& o) {
  // The first waiting tenant in share order whose part of the total has room.
  auto next = o.slot_queue.begin();
  while (next != o.slot_queue.end() && !TenantFits(o, next->tenant)) {
    ++next;
  }
  if (next == o.slot_queue.end()) {
    return false;
  }
  const uint32_t tenant = next->tenant;
  Share& s = o.tenants.at(tenant);
  const uint32_t d = s.dests.front();
  s.dests.pop_front();
  --o.waiters;
  ++s.held;
  Count(o, 0, 1);
  Recount(o, tenant, s);
  CountWaiting(tenant, -1);
  Requeue(o, tenant, s, false, true);
  grants_.push_back(d);
  return true;
}

void ConnectionBudget::Grant(uint32_t origin, bool others) {
  Origin& o = origins_[origin];
  while (o.waiters > 0 && Fits(o) && GrantOne(o)) {
  }
  if (o.waiters > 0 && !o.queued_for_total && o.in_flight + o.granted < SlotCapacity(o)) {
    // Its own slots have room: its waiters wait for the total, or for their tenants' part of
    // it (TenantFits), which any connection ending anywhere may give.
    o.queued_for_total = true;
    waiting_origins_.push_back(origin);
  }
  if (!others || limits_.total <= 0) {
    return;
  }
  // Connections freed in the total go round the origins waiting for it.
  size_t visits = waiting_origins_.size();
  while (!waiting_origins_.empty() && visits-- > 0) {
    const uint32_t w = waiting_origins_.front();
    waiting_origins_.pop_front();
    Origin& other = origins_[w];
    if (other.waiters == 0 || other.in_flight + other.granted >= SlotCapacity(other)) {
      other.queued_for_total = false;  // its own slots will free it
      MaybeForget(w);
      continue;
    }
    if (!Fits(other)) {
      waiting_origins_.push_front(w);
      return;  // the total is full
    }
    GrantOne(other);
    waiting_origins_.push_back(w);
  }
}

std::vector<uint32_t> ConnectionBudget::TakeGrants() {
  std::vector<uint32_t> out;
  out.swap(grants_);
  return out;
}

bool ConnectionBudget::StartSend(uint32_t origin, uint32_t tenant, uint32_t weight, uint64_t token,
                                 Priority priority) {
  if (origin == kNoOrigin) {
    return true;
  }
  Origin& o = origins_[origin];
  Share& s = o.tenants[tenant];
  s.weight = std::max<uint32_t>(1, weight);
  SetWeight(tenant, weight);
  if (s.kept > 0) {
    --s.kept;  // o.sending counts it already
    ++s.sending;
    return true;
  }
  if (o.send_waiters == 0 && o.sending < CapacityOf(o)) {
    ++o.sending;
    ++s.sending;
    return true;
  }
  s.sends.PushBack(token, priority);
  ++o.send_waiters;
  if (s.sends.size() == 1) {
    Requeue(o, tenant, s, true, false);
  }
  return false;
}

void ConnectionBudget::EndSend(uint32_t origin, uint32_t tenant) {
  if (origin == kNoOrigin) {
    return;
  }
  Origin& o = origins_[origin];
  auto it = o.tenants.find(tenant);
  EGRESS_CHECK(o.sending > 0 && it != o.tenants.end() && it->second.sending > 0);
  --o.sending;
  --it->second.sending;
  if (!it->second.sends.empty()) {
    Requeue(o, tenant, it->second, true, false);
  }
  GrantSends(o);
}

bool ConnectionBudget::Keep(uint32_t origin, uint32_t tenant) {
  if (origin == kNoOrigin) {
    return false;
  }
  Origin& o = origins_[origin];
  auto it = o.tenants.find(tenant);
  EGRESS_CHECK(o.sending > 0 && it != o.tenants.end() && it->second.sending > 0);
  Share& s = it->second;
  const auto tenants = static_cast<int64_t>(o.tenants.size());
  // Nobody else waits (it would be free for the tenant's next request anyway), its own request
  // waits and takes it at once, or it has another connection: nothing to keep. One at most.
  if (o.send_waiters == 0 || !s.sends.empty() || s.sending != 1 || s.kept != 0 ||
      tenants > CapacityOf(o)) {
    EndSend(origin, tenant);
    return false;
  }
  --s.sending;
  ++s.kept;
  return true;
}

void ConnectionBudget::Unkeep(uint32_t origin, uint32_t tenant) {
  if (origin == kNoOrigin) {
    return;
  }
  Origin& o = origins_[origin];
  auto it = o.tenants.find(tenant);
  if (it == o.tenants.end() || it->second.kept == 0) {
    return;
  }
  o.sending -= it->second.kept;
  it->second.kept = 0;
  if (!it->second.sends.empty()) {
    Requeue(o, tenant, it->second, true, false);
  }
  MaybeForgetTenant(o, tenant);
  GrantSends(o);
  MaybeForget(origin);
}

int64_t ConnectionBudget::kept(uint32_t origin, uint32_t tenant) const {
  if (origin == kNoOrigin) {
    return 0;
  }
  const Origin& o = origins_[origin];
  auto it = o.tenants.find(tenant);
  return it == o.tenants.end() ? 0 : it->second.kept;
}

int64_t ConnectionBudget::kept(uint32_t origin) const {
  if (origin == kNoOrigin) {
    return 0;
  }
  int64_t total = 0;
  for (const auto& [tenant, share] : origins_[origin].tenants) {
    total += share.kept;
  }
  return total;
}

void ConnectionBudget::GrantSends(Origin& o) {
  while (o.send_waiters > 0 && o.sending < CapacityOf(o)) {
    const uint32_t tenant = o.send_queue.begin()->tenant;
    Share& s = o.tenants.at(tenant);
    send_grants_.push_back(s.sends.front());
    s.sends.pop_front();
    --o.send_waiters;
    ++o.sending;
    ++s.sending;
    Requeue(o, tenant, s, true, true);
  }
}

std::vector<uint64_t> ConnectionBudget::TakeSendGrants() {
  std::vector<uint64_t> out;
  out.swap(send_grants_);
  return out;
}

int64_t ConnectionBudget::in_flight(uint32_t origin) const {
  return origin == kNoOrigin ? 0 : origins_[origin].in_flight;
}

int64_t ConnectionBudget::sending(uint32_t origin) const {
  return origin == kNoOrigin ? 0 : origins_[origin].sending;
}

bool ConnectionBudget::multiplexed(uint32_t origin) const {
  return origin != kNoOrigin && origins_[origin].multiplexed;
}

size_t ConnectionBudget::waiting(uint32_t origin) const {
  return origin == kNoOrigin ? 0 : origins_[origin].waiters;
}

size_t ConnectionBudget::waiting_to_send(uint32_t origin) const {
  return origin == kNoOrigin ? 0 : origins_[origin].send_waiters;
}

}  // namespace egress::pacing
