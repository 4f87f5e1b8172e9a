#include "adapters/shared_meter.h"

#include <algorithm>

#include "dispatcher/base/saturating.h"

namespace egress::adapters {
namespace {

using pacing::Charge;
using pacing::GcraParams;
using pacing::Nanos;

Nanos MicrosToNanos(int64_t us) { return Nanos(SatMul(std::max<int64_t>(0, us), 1000)); }

// Whole units a meter at `tat` lets go at `now`, 0 to depth (the scripts' `remaining`).
int64_t Remaining(int64_t tat, int64_t interval, int64_t depth, int64_t now) {
  const int64_t base = std::max(tat, now);
  const int64_t room = SatSub(now, SatSub(base, SatMul(depth, interval))) / interval;
  if (room < 0) {
    return 0;
  }
  return room > depth ? std::max<int64_t>(0, depth) : room;
}

}  // namespace

int64_t WaitMicros(Nanos wait) { return std::max<int64_t>(0, (wait.count() + 999) / 1000); }

pacing::ParkKind ParkKindOf(int64_t value) {
  switch (value) {
    case 1:
      return pacing::ParkKind::kRetryAfter;
    case 2:
      return pacing::ParkKind::kRemainingZero;
    default:
      return pacing::ParkKind::kNone;
  }
}

int64_t IntervalMicros(const GcraParams& params) {
  return std::max<int64_t>(1, (std::max<int64_t>(1, params.interval_ns) + 999) / 1000);
}

SharedTake DecideSharedTake(std::span<const Charge> charges,
                            std::span<const SharedMeterState> state, int64_t now_us,
                            int64_t ahead_us) {
  SharedTake take;
  take.new_tat_us.assign(charges.size(), -1);
  pacing::TakeResult& result = take.result;
  for (size_t i = 0; i < charges.size(); ++i) {
    if (state[i].parked_until_us > now_us) {
      result.allowed = false;
      result.denied_index = i;
      result.retry_after = MicrosToNanos(state[i].parked_until_us - now_us);
      result.park = state[i].park;
      return take;
    }
  }
  const int64_t ahead = std::max<int64_t>(0, ahead_us);
  bool allowed = true;
  int64_t wait = 0;
  int64_t go = 0;
  std::vector<int64_t> allow_at(charges.size(), 0);
  for (size_t i = 0; i < charges.size(); ++i) {
    const int64_t cost = charges[i].cost;
    if (cost <= 0) {
      continue;
    }
    const int64_t interval = IntervalMicros(charges[i].params);
    const int64_t depth = std::max(charges[i].params.depth, cost);
    allow_at[i] = SatSub(std::max(state[i].tat_us, now_us), SatMul(depth - cost, interval));
    if (SatAdd(now_us, ahead) < allow_at[i]) {
      if (allowed || SatSub(allow_at[i], now_us) > wait) {
        result.denied_index = i;
        wait = SatSub(allow_at[i], now_us);
      }
      allowed = false;
    } else {
      go = std::max(go, SatSub(allow_at[i], now_us));
    }
  }
  if (!allowed) {
    result.allowed = false;
    result.retry_after = MicrosToNanos(wait);
    return take;
  }
  // The units go at `at` (when the last meter conforms). A meter that conforms earlier is charged
  // no earlier than its slice's own time (cost * interval) before then, as in the scripts.
  const int64_t at = SatAdd(now_us, go);
  int64_t remaining = -1;
  int64_t reset = 0;
  for (size_t i = 0; i < charges.size(); ++i) {
    const int64_t cost = charges[i].cost;
    if (cost <= 0) {
      continue;
    }
    const int64_t interval = IntervalMicros(charges[i].params);
    const int64_t c = std::max({now_us, allow_at[i], SatSub(at, SatMul(cost, interval))});
    // As the scripts: the meter stores at most kMaxSharedTat; the answer is of the value itself.
    const int64_t tat = SatAdd(std::max(state[i].tat_us, c), SatMul(cost, interval));
    take.new_tat_us[i] = std::min(tat, kMaxSharedTat);
    const int64_t r = Remaining(tat, interval, charges[i].params.depth, at);
    remaining = remaining < 0 ? r : std::min(remaining, r);
    reset = std::max(reset, SatSub(tat, now_us));
  }
  result.allowed = true;
  result.retry_after = MicrosToNanos(go);
  result.remaining = std::max<int64_t>(0, remaining);
  result.reset_after = MicrosToNanos(reset);
  return take;
}

int64_t RescaledTat(int64_t tat_us, const GcraParams& from, const GcraParams& to, int64_t now_us) {
  const int64_t from_us = IntervalMicros(from);
  if (tat_us <= now_us) {
    return -1;
  }
  const __int128 owed = static_cast<__int128>(tat_us - now_us) * IntervalMicros(to) / from_us;
  return static_cast<int64_t>(std::min<__int128>(now_us + owed, kMaxSharedTat));
}

int64_t SyncedTat(const GcraParams& params, int64_t available, int64_t now_us) {
  const int64_t burst = std::max<int64_t>(1, params.depth);
  const int64_t left = std::clamp<int64_t>(available, 0, burst);
  return std::min(SatAdd(now_us, SatMul(burst - left, IntervalMicros(params))), kMaxSharedTat);
}

pacing::MeterView InspectSharedMeter(const SharedMeterState& state, const GcraParams& params,
                                     int64_t now_us) {
  pacing::MeterView view;
  view.reset_after = MicrosToNanos(SatSub(std::max(state.tat_us, now_us), now_us));
  if (state.parked_until_us > now_us) {
    view.remaining = 0;
    view.parked_until = pacing::FromNanos(SatMul(state.parked_until_us - now_us, 1000));
    view.park = state.park;
    return view;
  }
  view.remaining = Remaining(state.tat_us, IntervalMicros(params), params.depth, now_us);
  return view;
}

}  // namespace egress::adapters
