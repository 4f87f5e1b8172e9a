#include "dispatcher/pacing/memory_budget_store.h"

#include <algorithm>
#include <limits>

namespace egress::pacing {
namespace {

// At most this many charges per call; paths are at most a handful of scopes long.

// Stands in for key 0, which marks an empty slot.
constexpr ScopeKey kZeroKey = 0x9e3779b97f4a7c15ULL;

ScopeKey StoredKey(ScopeKey key) { return key == 0 ? kZeroKey : key; }

}  // namespace

size_t MemoryBudgetStore::Probe(ScopeKey key) const {
  // Keys are already well-mixed hashes (scope_path.h), so their low bits index the table.
  const size_t mask = meters_.size() - 1;
  size_t i = static_cast<size_t>(key) & mask;
  while (meters_[i].key != 0 && meters_[i].key != key) {
    i = (i + 1) & mask;
  }
  return i;
}

void MemoryBudgetStore::Rehash(size_t capacity) {
  std::vector<Meter> old = std::move(meters_);
  meters_.assign(capacity, Meter{});
  for (const Meter& meter : old) {
    if (meter.key != 0) {
      meters_[Probe(meter.key)] = meter;
    }
  }
}

MemoryBudgetStore::Meter& MemoryBudgetStore::Insert(ScopeKey key) {
  // Grow past 13/16 full: linear probing stays short, and the table costs ~20-40 bytes a key.
  if ((meter_count_ + 1) * 16 > meters_.size() * 13) {
    Rehash(std::max<size_t>(16, meters_.size() * 2));
  }
  Meter& meter = meters_[Probe(key)];
  if (meter.key == 0) {
    meter.key = key;
    meter.tat_ns = 0;
    ++meter_count_;
  }
  return meter;
}

bool MemoryBudgetStore::DeniedByPark(ScopeKey key, size_t index, int64_t now_ns,
                                     TakeResult& result) const {
  auto it = parks_.find(key);
  if (it == parks_.end() || it->second.until_ns <= now_ns) {
    return false;
  }
  result.allowed = false;
  result.denied_index = index;
  result.retry_after = Nanos(it->second.until_ns - now_ns);
  result.park = it->second.kind;
  return true;
}

Result<TakeResult> MemoryBudgetStore::TakeAll(std::span<const Charge> charges, SteadyTime now) {
  if (charges.size() > kMaxCharges) {
    return Status::InvalidArgument("too many scopes in one charge");
  }
  const int64_t now_ns = ToNanos(now);
  TakeResult result;
  if (!parks_.empty()) {
    for (size_t i = 0; i < charges.size(); ++i) {
      if (DeniedByPark(StoredKey(charges[i].key), i, now_ns, result)) {
        return result;
      }
    }
  }
  Meter* found[kMaxCharges];
  int64_t new_tats[kMaxCharges];
  result.allowed = true;
  result.remaining = INT64_MAX;
  for (size_t i = 0; i < charges.size(); ++i) {
    found[i] = nullptr;
    if (!meters_.empty()) {
      Meter& meter = meters_[Probe(StoredKey(charges[i].key))];
      found[i] = meter.key == 0 ? nullptr : &meter;
    }
    const int64_t tat = found[i] == nullptr ? 0 : found[i]->tat_ns;
    GcraDecision d = GcraEvaluate(tat, charges[i].params, charges[i].cost, now_ns);
    if (!d.allowed) {
      if (result.allowed || d.retry_after > result.retry_after) {
        result.denied_index = i;
        result.retry_after = d.retry_after;
      }
      result.allowed = false;
      continue;
    }
    new_tats[i] = d.tat_ns;
    result.remaining = std::min(result.remaining, d.remaining);
    result.reset_after = std::max(result.reset_after, d.reset_after);
  }
  if (!result.allowed) {
    result.remaining = 0;
    result.reset_after = Nanos(0);
    return result;
  }
  // Existing meters first: inserting a missing one may move the table under `found`.
  bool missing = false;
  for (size_t i = 0; i < charges.size(); ++i) {
    if (found[i] != nullptr) {
      found[i]->tat_ns = new_tats[i];
    } else {
      missing = true;
    }
  }
  for (size_t i = 0; missing && i < charges.size(); ++i) {
    if (found[i] == nullptr) {
      Insert(StoredKey(charges[i].key)).tat_ns = new_tats[i];
    }
  }
  return result;
}

Status MemoryBudgetStore::Park(ScopeKey key, SteadyTime until, ParkKind kind) {
  ParkEntry& entry = parks_[StoredKey(key)];
  const int64_t until_ns = ToNanos(until);
  if (until_ns > entry.until_ns) {
    entry.until_ns = until_ns;
    entry.kind = kind;
  }
  return Status::Ok();
}

Status MemoryBudgetStore::Unpark(ScopeKey key) {
  auto it = parks_.find(StoredKey(key));
  if (it != parks_.end()) {
    it->second.until_ns = 0;
    it->second.kind = ParkKind::kNone;
  }
  return Status::Ok();
}

Status MemoryBudgetStore::Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to,
                                  SteadyTime now) {
  if (meters_.empty() || from.interval_ns <= 0) {
    return Status::Ok();
  }
  Meter& meter = meters_[Probe(StoredKey(key))];
  const int64_t now_ns = ToNanos(now);
  if (meter.key == 0 || meter.tat_ns <= now_ns) {
    return Status::Ok();
  }
  const __int128 owed =
      static_cast<__int128>(meter.tat_ns - now_ns) * to.interval_ns / from.interval_ns;
  meter.tat_ns = SatAdd(
      now_ns, static_cast<int64_t>(std::min<__int128>(owed, std::numeric_limits<int64_t>::max())));
  return Status::Ok();
}

Status MemoryBudgetStore::Sync(ScopeKey key, const GcraParams& params, int64_t available,
                               SteadyTime now) {
  if (params.interval_ns <= 0) {
    return Status::InvalidArgument("sync needs a budget with an interval");
  }
  const int64_t burst = std::max<int64_t>(1, params.depth);
  const int64_t owed = burst - std::clamp<int64_t>(available, 0, burst);
  // remaining = floor((now - (TAT - depth*T)) / T) = depth - (TAT - now) / T.
  Insert(StoredKey(key)).tat_ns = SatAdd(ToNanos(now), SatMul(owed, params.interval_ns));
  return Status::Ok();
}

Result<MeterView> MemoryBudgetStore::Inspect(ScopeKey key, const GcraParams& params,
                                             SteadyTime now) {
  const int64_t now_ns = ToNanos(now);
  key = StoredKey(key);
  int64_t tat_ns = 0;
  if (!meters_.empty()) {
    const Meter& meter = meters_[Probe(key)];
    tat_ns = meter.key == 0 ? 0 : meter.tat_ns;
  }
  MeterView view;
  view.remaining = GcraRemaining(tat_ns, params, now_ns);
  view.reset_after = Nanos(SatSub(std::max(tat_ns, now_ns), now_ns));
  auto park = parks_.find(key);
  if (park != parks_.end() && park->second.until_ns > now_ns) {
    view.parked_until = FromNanos(park->second.until_ns);
    view.park = park->second.kind;
    view.remaining = 0;
  }
  return view;
}

size_t MemoryBudgetStore::Sweep(SteadyTime now) {
  const int64_t now_ns = ToNanos(now);
  // A key is forgotten when neither its meter nor its park holds anything at `now`.
  auto meter_live = [&](ScopeKey key) {
    if (meters_.empty()) {
      return false;
    }
    const Meter& meter = meters_[Probe(key)];
    return meter.key != 0 && meter.tat_ns > now_ns;
  };
  size_t dropped = 0;
  for (const auto& [key, park] : parks_) {
    if (park.until_ns <= now_ns && !meter_live(key)) {
      ++dropped;
    }
  }
  std::vector<Meter> kept;
  for (const Meter& meter : meters_) {
    if (meter.key == 0) {
      continue;
    }
    if (meter.tat_ns > now_ns) {
      kept.push_back(meter);
    } else if (parks_.find(meter.key) == parks_.end()) {
      ++dropped;  // keys with a park were counted above
    }
  }
  std::erase_if(parks_, [now_ns](const auto& item) { return item.second.until_ns <= now_ns; });
  size_t capacity = 16;
  while (kept.size() * 16 > capacity * 13) {
    capacity *= 2;
  }
  meters_.assign(kept.empty() ? 0 : capacity, Meter{});
  meter_count_ = kept.size();
  for (const Meter& meter : kept) {
    meters_[Probe(meter.key)] = meter;
  }
  return dropped;
}

size_t MemoryBudgetStore::size() const {
  size_t count = meter_count_;
  for (const auto& item : parks_) {
    if (meters_.empty() || meters_[Probe(item.first)].key == 0) {
      ++count;
    }
  }
  return count;
}

}  // namespace egress::pacing
