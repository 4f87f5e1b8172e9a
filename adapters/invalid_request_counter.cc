#include "adapters/invalid_request_counter.h"

#include <algorithm>
#include <vector>

namespace egress::adapters {

namespace {

bool IsLive(int64_t slot_index, int64_t current) {
  return slot_index > current - InvalidRequestCounter::kSlots && slot_index <= current;
}

}  // namespace

InvalidRequestCounter::InvalidRequestCounter() : InvalidRequestCounter(Options{}) {}

InvalidRequestCounter::InvalidRequestCounter(Options options)
    : options_(options),
      slot_ns_(std::max<int64_t>(
          1,
          std::chrono::duration_cast<std::chrono::nanoseconds>(options.window).count() / kSlots)) {}

bool InvalidRequestCounter::Counts(int http_status, pacing::RateLimitScope scope) {
  if (http_status == 401 || http_status == 403) {
    return true;
  }
  return http_status == 429 && scope != pacing::RateLimitScope::kShared;
}

int64_t InvalidRequestCounter::SlotIndex(SteadyTime t) const {
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return ns >= 0 ? ns / slot_ns_ : -((-ns + slot_ns_ - 1) / slot_ns_);
}

int64_t InvalidRequestCounter::Live(const Window& window, int64_t current) const {
  int64_t total = 0;
  for (const Slot& slot : window) {
    if (slot.count > 0 && IsLive(slot.index, current)) {
      total += slot.count;
    }
  }
  return total;
}

std::optional<SteadyTime> InvalidRequestCounter::Record(std::string_view token_key, int http_status,
                                                        pacing::RateLimitScope scope,
                                                        SteadyTime now) {
  if (Counts(http_status, scope)) {
    ++SlotOf(WindowOf(token_key), SlotIndex(now)).count;
  }
  return StopUntil(token_key, now);
}

InvalidRequestCounter::Window& InvalidRequestCounter::WindowOf(std::string_view token_key) {
  auto it = windows_.find(token_key);
  if (it == windows_.end()) {
    it = windows_.emplace(std::string(token_key), Window{}).first;
  }
  return it->second;
}

// The slot for time slot `index`, emptied first when it held an older one.
InvalidRequestCounter::Slot& InvalidRequestCounter::SlotOf(Window& window, int64_t index) {
  Slot& slot = window[static_cast<size_t>(((index % kSlots) + kSlots) % kSlots)];
  if (slot.index != index) {
    slot = Slot{index, 0};
  }
  return slot;
}

void InvalidRequestCounter::MergeShared(std::string_view token_key,
                                        const std::vector<SlotCount>& slots, SteadyTime now) {
  const int64_t current = SlotIndex(now);
  Window* window = nullptr;
  for (const SlotCount& shared : slots) {
    if (shared.age < 0 || shared.age >= kSlots || shared.count <= 0) {
      continue;
    }
    if (window == nullptr) {
      window = &WindowOf(token_key);
    }
    Slot& slot = SlotOf(*window, current - shared.age);
    slot.count = std::max(slot.count, std::min(shared.count, kMaxSharedCount));
  }
}

std::optional<SteadyTime> InvalidRequestCounter::Record(std::string_view token_key,
                                                        const AttemptReport& report,
                                                        SteadyTime now) {
  return Record(token_key, report.attempt.http_status, report.observation.scope, now);
}

int64_t InvalidRequestCounter::Count(std::string_view token_key, SteadyTime now) const {
  auto it = windows_.find(token_key);
  return it == windows_.end() ? 0 : Live(it->second, SlotIndex(now));
}

std::optional<SteadyTime> InvalidRequestCounter::StopUntil(std::string_view token_key,
                                                           SteadyTime now) const {
  auto it = windows_.find(token_key);
  if (it == windows_.end()) {
    return std::nullopt;
  }
  const int64_t current = SlotIndex(now);
  int64_t total = Live(it->second, current);
  if (total < options_.threshold) {
    return std::nullopt;
  }
  std::vector<Slot> live;
  for (const Slot& slot : it->second) {
    if (slot.count > 0 && IsLive(slot.index, current)) {
      live.push_back(slot);
    }
  }
  std::sort(live.begin(), live.end(),
            [](const Slot& a, const Slot& b) { return a.index < b.index; });
  for (const Slot& slot : live) {
    total -= slot.count;
    if (total < options_.threshold) {
      // Slot `index` stops counting once the current slot is index + kSlots.
      return SteadyTime(std::chrono::nanoseconds((slot.index + kSlots) * slot_ns_));
    }
  }
  return SteadyTime(std::chrono::nanoseconds((current + 1) * slot_ns_));  // unreachable
}

void InvalidRequestCounter::Sweep(SteadyTime now) {
  const int64_t current = SlotIndex(now);
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (Live(it->second, current) == 0) {
      it = windows_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace egress::adapters
