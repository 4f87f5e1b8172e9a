#include <algorithm>

#include "dispatcher/pacing/scheduler.h"

// Scheduler: the startup window of a key whose platform states no limit (LINE; docs/pacing.md,
// "Adaptive pace", startup window). Until the key's first 429 (or its 64th acceptance) at most
// one request more than it has had accepted is in flight, at most four, as TCP's slow start keeps
// its first window small: the configured ceiling would otherwise send a whole round trip's worth
// before the first answer, each request past the platform's burst a 429.
namespace egress::pacing {

namespace {

// A platform that accepts a whole window at once (a fixed window's quota) would see a round
// trip's worth more than it took with a window that only grows: each a 429.
constexpr int64_t kStartupInFlight = 4;
constexpr int64_t kStartupDoneAt = 64;

}  // namespace

bool Scheduler::StartupAllows(uint32_t d) {
  Dest& dest = dests_[d];
  const uint32_t leaf = dest.scopes[dest.leaf_index];
  const ScopeKey key = scopes_.at(leaf).key;
  if (scopes_.learned(leaf) || (!adaptive_.empty() && adaptive_.contains(key))) {
    return true;  // the key's pace is known
  }
  StartupWindow& window = startup_[key];
  if (window.done || window.in_flight < window.allowed) {
    return true;
  }
  dest.state = State::kBlocked;
  dest.reason = DeferReason::kConcurrency;
  if (window.waiting.size() < dests_.size()) {
    window.waiting.push_back(d);
  }
  return false;
}

void Scheduler::StartupSent(const Dest& dest) {
  auto it = startup_.find(scopes_.at(dest.scopes[dest.leaf_index]).key);
  if (it != startup_.end() && !it->second.done) {
    ++it->second.in_flight;
  }
}

void Scheduler::StartupAnswered(const Dest& dest, bool accepted, bool throttled) {
  auto it = startup_.find(scopes_.at(dest.scopes[dest.leaf_index]).key);
  if (it == startup_.end() || it->second.done) {
    return;
  }
  StartupWindow& window = it->second;
  window.in_flight = std::max<int64_t>(0, window.in_flight - 1);
  if (accepted) {
    window.allowed = std::min(window.allowed + 1, kStartupInFlight);
    ++window.accepted;
  }
  if (throttled || window.accepted >= kStartupDoneAt) {
    window.done = true;
  }
  for (const uint32_t d : window.waiting) {
    if (dests_[d].live && dests_[d].state == State::kBlocked) {
      MakeReady(d);
    }
  }
  window.waiting.clear();
}

}  // namespace egress::pacing
