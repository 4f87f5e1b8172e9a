#include "dispatcher/service/delivery/drain_estimate.h"

#include <algorithm>
#include <cmath>

namespace egress::service {

void DrainRate::Roll(int64_t now_ms) {
  if (now_ms < slot_ms_ + kSlotMs) {
    return;
  }
  const int64_t slots = (now_ms - slot_ms_) / kSlotMs;
  const int shift = static_cast<int>(std::min<int64_t>(slots, kSlots));
  for (int i = kSlots - 1; i >= 0; --i) {
    counts_[i] = i >= shift ? counts_[i - shift] : 0;
    first_[i] = i >= shift ? first_[i - shift] : 0;
  }
  slot_ms_ += slots * kSlotMs;
}

void DrainRate::Count(int64_t now_ms, int64_t n) {
  if (n <= 0) {
    return;
  }
  now_ms = std::max(now_ms, last_ms_);
  Roll(now_ms);
  if (std::all_of(counts_.begin(), counts_.end(), [](int32_t c) { return c == 0; })) {
    slot_ms_ = now_ms;  // a new series: its slots start at its first delivery
  }
  if (counts_[0] == 0) {
    first_[0] = static_cast<uint16_t>(now_ms - slot_ms_);
  }
  counts_[0] = static_cast<int32_t>(std::min<int64_t>(INT32_MAX, counts_[0] + n));
  last_ms_ = now_ms;
}

std::optional<double> DrainRate::PerSecond(int64_t now_ms, int64_t enough) const {
  DrainRate at = *this;
  at.Roll(std::max(now_ms, last_ms_));
  int64_t total = 0;
  int64_t first_ms = 0;
  for (int i = 0; i < kSlots; ++i) {
    if (at.counts_[i] == 0) {
      continue;
    }
    total += at.counts_[i];
    first_ms = at.slot_ms_ - i * kSlotMs + at.first_[i];
    if (i >= 1 && total >= enough) {
      break;
    }
  }
  if (total < 2 || last_ms_ <= first_ms) {
    return std::nullopt;
  }
  const double span_ms = static_cast<double>(last_ms_ - first_ms);
  const double interval_ms = span_ms / static_cast<double>(total - 1);
  const double idle_ms = static_cast<double>(std::max<int64_t>(0, now_ms - last_ms_));
  if (idle_ms > 2 * interval_ms) {
    // Stopped for longer than its pace explains: as if the next one left now.
    return static_cast<double>(total) * 1000.0 / (span_ms + idle_ms);
  }
  return 1000.0 / interval_ms;
}

std::optional<int64_t> DrainEtaMs(const DrainInputs& in, int64_t now_ms) {
  if (in.backlog <= 0) {
    return now_ms;
  }
  if (in.held) {
    return std::nullopt;
  }
  std::optional<double> rate = in.seen_per_s;
  if (in.foreseen_per_s && (!rate || *in.foreseen_per_s < *rate)) {
    rate = in.foreseen_per_s;
  }
  if (!rate || !(*rate > 0) || !std::isfinite(*rate)) {
    return std::nullopt;
  }
  const double ms = static_cast<double>(in.backlog) * 1000.0 / *rate;
  // Beyond a year is no estimate anyone can use.
  constexpr double kYearMs = 366.0 * 24 * 3600 * 1000;
  if (ms > kYearMs) {
    return std::nullopt;
  }
  const int64_t start = std::max(now_ms, in.not_before_ms);
  int64_t eta = start + static_cast<int64_t>(std::llround(ms));
  if (in.group_eta_ms) {
    // A destination's own rate, read over a few deliveries of its share of a shared key, is
    // noisy; its group cannot be done before it is.
    eta = std::max(start, std::min(eta, *in.group_eta_ms));
  }
  return eta;
}

}  // namespace egress::service
