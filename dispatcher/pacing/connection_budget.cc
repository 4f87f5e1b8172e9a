#include "dispatcher/pacing/connection_budget.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "dispatcher/base/check.h"

namespace egress::pacing {

ConnectionBudget::ConnectionBudget(ConnectionLimits limits, int64_t quantum)
    : limits_(limits), quantum_(std::max<int64_t>(1, quantum)) {
  limits_.streams = std::max<int64_t>(1, limits_.streams);
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
    origins_[o].live = true;
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
  if (o.refs != 0 || o.in_flight != 0 || o.granted != 0 || o.waiters != 0 || o.queued_for_total) {
    return;
  }
  index_.erase(o.name);
  o = Origin{};
  free_.push_back(origin);
}

int64_t ConnectionBudget::Connections(const Origin& o, int64_t requests) const {
  if (!o.multiplexed) {
    return requests;
  }
  return (requests + limits_.streams - 1) / limits_.streams;
}

int64_t ConnectionBudget::capacity(uint32_t origin) const {
  if (limits_.per_origin <= 0) {
    return INT64_MAX;
  }
  const Origin& o = origins_[origin];
  return o.multiplexed ? limits_.per_origin * limits_.streams : limits_.per_origin;
}

bool ConnectionBudget::Fits(const Origin& o) const {
  const int64_t used = o.in_flight + o.granted;
  const auto index = static_cast<uint32_t>(&o - origins_.data());
  if (used >= capacity(index)) {
    return false;
  }
  if (limits_.total <= 0) {
    return true;
  }
  return total_used_ - Connections(o, used) + Connections(o, used + 1) <= limits_.total;
}

void ConnectionBudget::Use(Origin& o, int64_t delta) {
  const int64_t before = Connections(o, o.in_flight + o.granted);
  o.in_flight += delta;
  total_used_ += Connections(o, o.in_flight + o.granted) - before;
}

bool ConnectionBudget::HasRoom(uint32_t origin) const {
  if (origin == kNoOrigin) {
    return true;
  }
  const Origin& o = origins_[origin];
  if (o.waiters != 0 || !Fits(o)) {
    return false;
  }
  // Others waiting for the total come first when this request would open a connection.
  const int64_t used = o.in_flight + o.granted;
  return waiting_origins_.empty() || Connections(o, used + 1) == Connections(o, used);
}

void ConnectionBudget::Take(uint32_t origin, bool granted) {
  if (origin == kNoOrigin) {
    return;
  }
  Origin& o = origins_[origin];
  if (granted) {
    EGRESS_CHECK(o.granted > 0);
    --o.granted;
    ++o.in_flight;  // the same request: no connection more or less
    return;
  }
  Use(o, 1);
}

void ConnectionBudget::Give(uint32_t origin) {
  if (origin == kNoOrigin) {
    return;
  }
  Origin& o = origins_[origin];
  EGRESS_CHECK(o.in_flight > 0);
  Use(o, -1);
  Grant(origin, true);
  MaybeForget(origin);
}

void ConnectionBudget::Return(uint32_t origin) {
  if (origin == kNoOrigin) {
    return;
  }
  Origin& o = origins_[origin];
  EGRESS_CHECK(o.granted > 0);
  const int64_t before = Connections(o, o.in_flight + o.granted);
  --o.granted;
  total_used_ += Connections(o, o.in_flight + o.granted) - before;
  Grant(origin, true);
  MaybeForget(origin);
}

void ConnectionBudget::Wait(uint32_t origin, uint32_t tenant, uint32_t weight, uint32_t d,
                            int64_t cost, bool first) {
  EGRESS_CHECK(origin != kNoOrigin);
  Origin& o = origins_[origin];
  cost = std::max<int64_t>(1, cost);
  auto it = std::find_if(o.ring.begin(), o.ring.end(),
                         [&](const TenantWait& w) { return w.tenant == tenant; });
  if (first) {
    TenantWait w{.tenant = tenant};
    if (it != o.ring.end()) {
      w = std::move(*it);
      o.ring.erase(it);
    }
    o.ring.push_front(std::move(w));
    it = o.ring.begin();
    it->deficit = std::max(it->deficit, cost);
    it->turn = true;
    it->dests.emplace_front(d, cost);
  } else {
    if (it == o.ring.end()) {
      o.ring.push_back(TenantWait{.tenant = tenant});
      it = std::prev(o.ring.end());
    }
    it->dests.emplace_back(d, cost);
  }
  it->weight = std::max<uint32_t>(1, weight);
  ++o.waiters;
  if (!o.queued_for_total && o.in_flight + o.granted < capacity(origin)) {
    // Held back by the total, not by the origin's own connections.
    o.queued_for_total = true;
    waiting_origins_.push_back(origin);
  }
  // Room may have been left by a grant returned while nobody waited.
  Grant(origin, false);
}

void ConnectionBudget::SetMultiplexed(uint32_t origin) {
  if (origin == kNoOrigin || origins_[origin].multiplexed) {
    return;
  }
  Origin& o = origins_[origin];
  const int64_t before = Connections(o, o.in_flight + o.granted);
  o.multiplexed = true;
  total_used_ += Connections(o, o.in_flight + o.granted) - before;
  Grant(origin, true);
}

bool ConnectionBudget::GrantOne(Origin& o) {
  size_t misses = 0;
  while (!o.ring.empty()) {
    if (o.ring.front().dests.empty()) {
      o.ring.pop_front();
      misses = 0;
      continue;
    }
    if (misses >= o.ring.size()) {
      // Nobody's deficit covers its head: add the rounds the nearest one needs, to all at once.
      int64_t rounds = INT64_MAX;
      for (const TenantWait& w : o.ring) {
        const int64_t per_round = quantum_ * w.weight;
        const int64_t need = w.dests.front().second - w.deficit;
        rounds = std::min(rounds, (need + per_round - 1) / per_round);
      }
      for (TenantWait& w : o.ring) {
        w.deficit += std::max<int64_t>(0, rounds - 1) * quantum_ * w.weight;
      }
      misses = 0;
    }
    TenantWait& w = o.ring.front();
    const int64_t cost = w.dests.front().second;
    if (!w.turn) {
      w.deficit += quantum_ * w.weight;
      w.turn = true;
    }
    if (w.deficit < cost) {
      w.turn = false;
      o.ring.push_back(std::move(w));
      o.ring.pop_front();
      ++misses;
      continue;
    }
    const uint32_t d = w.dests.front().first;
    w.dests.pop_front();
    w.deficit -= cost;
    --o.waiters;
    if (w.dests.empty()) {
      o.ring.pop_front();  // a tenant that stops waiting keeps no credit
    }
    const int64_t before = Connections(o, o.in_flight + o.granted);
    ++o.granted;
    total_used_ += Connections(o, o.in_flight + o.granted) - before;
    grants_.push_back(d);
    return true;
  }
  return false;
}

void ConnectionBudget::Grant(uint32_t origin, bool others) {
  Origin& o = origins_[origin];
  while (o.waiters > 0 && Fits(o) && GrantOne(o)) {
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
    if (other.waiters == 0 || other.in_flight + other.granted >= capacity(w)) {
      other.queued_for_total = false;  // its own connections will free it
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

int64_t ConnectionBudget::in_flight(uint32_t origin) const {
  return origin == kNoOrigin ? 0 : origins_[origin].in_flight;
}

bool ConnectionBudget::multiplexed(uint32_t origin) const {
  return origin != kNoOrigin && origins_[origin].multiplexed;
}

size_t ConnectionBudget::waiting(uint32_t origin) const {
  return origin == kNoOrigin ? 0 : origins_[origin].waiters;
}

}  // namespace egress::pacing
