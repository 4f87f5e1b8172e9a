#include "dispatcher/memory_budget_store.h"

#include <algorithm>

namespace egress::dispatcher {
namespace {

// At most this many charges per call; paths are at most a handful of scopes long.
constexpr size_t kMaxCharges = 8;

}  // namespace

bool MemoryBudgetStore::DeniedByPark(const Charge& charge, size_t index, int64_t now_ns,
                                     TakeResult& result) const {
  auto it = entries_.find(charge.key);
  if (it == entries_.end() || it->second.parked_until_ns <= now_ns) {
    return false;
  }
  result.allowed = false;
  result.denied_index = index;
  result.retry_after = Nanos(it->second.parked_until_ns - now_ns);
  result.park = it->second.park;
  return true;
}

Result<TakeResult> MemoryBudgetStore::TakeAll(std::span<const Charge> charges, SteadyTime now) {
  if (charges.size() > kMaxCharges) {
    return Status::InvalidArgument("too many scopes in one charge");
  }
  const int64_t now_ns = ToNanos(now);
  TakeResult result;
  for (size_t i = 0; i < charges.size(); ++i) {
    if (DeniedByPark(charges[i], i, now_ns, result)) {
      return result;
    }
  }
  int64_t new_tats[kMaxCharges];
  result.allowed = true;
  result.remaining = INT64_MAX;
  for (size_t i = 0; i < charges.size(); ++i) {
    auto it = entries_.find(charges[i].key);
    const int64_t tat = it == entries_.end() ? 0 : it->second.tat_ns;
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
  for (size_t i = 0; i < charges.size(); ++i) {
    entries_[charges[i].key].tat_ns = new_tats[i];
  }
  return result;
}

Status MemoryBudgetStore::Park(ScopeKey key, SteadyTime until, ParkKind kind) {
  Entry& entry = entries_[key];
  const int64_t until_ns = ToNanos(until);
  if (until_ns > entry.parked_until_ns) {
    entry.parked_until_ns = until_ns;
    entry.park = kind;
  }
  return Status::Ok();
}

Status MemoryBudgetStore::Unpark(ScopeKey key) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    it->second.parked_until_ns = 0;
    it->second.park = ParkKind::kNone;
  }
  return Status::Ok();
}

Result<MeterView> MemoryBudgetStore::Inspect(ScopeKey key, const GcraParams& params,
                                             SteadyTime now) {
  const int64_t now_ns = ToNanos(now);
  auto it = entries_.find(key);
  Entry entry = it == entries_.end() ? Entry{} : it->second;
  MeterView view;
  const int64_t base = std::max(entry.tat_ns, now_ns);
  view.remaining = (now_ns - (base - params.depth * params.interval_ns)) / params.interval_ns;
  view.reset_after = Nanos(base - now_ns);
  if (entry.parked_until_ns > now_ns) {
    view.parked_until = FromNanos(entry.parked_until_ns);
    view.park = entry.park;
    view.remaining = 0;
  }
  return view;
}

size_t MemoryBudgetStore::Sweep(SteadyTime now) {
  const int64_t now_ns = ToNanos(now);
  return std::erase_if(entries_, [now_ns](const auto& item) {
    return item.second.tat_ns <= now_ns && item.second.parked_until_ns <= now_ns;
  });
}

}  // namespace egress::dispatcher
