#include <algorithm>

#include "dispatcher/pacing/scheduler.h"

// Scheduler: what one destination's responses teach its siblings, the destinations whose leaf
// has the same shape because the platform gives every one of them the same limit (every Slack
// channel of a workspace: docs/pacing.md, "Siblings"), and where a Retry-After parks.
//
// A configured burst is a guess (Slack publishes none). A guess above the real burst costs a 429
// on every destination that tries it, and each of those parks the destination: twenty channels,
// twenty 429s, once each. So the levels above the largest one any sibling had accepted (the
// confirmed level, 1 at first: a burst of 1 is the leaky bucket of the rate) are tried by one
// sibling at a time, one level at a time; the others keep to the confirmed level meanwhile and
// are woken when the probe ends. An accepted probe confirms its level for all; a refused one
// teaches all of them the level below it, and no sibling tries that level again.
namespace egress::pacing {

namespace {

constexpr uint32_t kNil = ScopeTable::kNil;
// A probe whose answer never came (the destination removed, the delivery cancelled) is another
// sibling's to take after this long.
constexpr int64_t kProbeTimeoutNs = 30'000'000'000;

}  // namespace

ScopeKey Scheduler::SiblingKey(const Dest& dest) const {
  return SiblingGroupKey(scopes_.at(dest.scopes[dest.credential_index]).key,
                         scopes_.name(dest.scopes[dest.leaf_index]));
}

int64_t Scheduler::SiblingBurst(const Dest& dest) const {
  if (!dest.shared_shape || shapes_.empty()) {
    return 0;
  }
  auto it = shapes_.find(SiblingKey(dest));
  return it == shapes_.end() ? 0 : it->second.learned_burst;
}

Scheduler::SiblingShape& Scheduler::ShapeOf(const Dest& dest) {
  const ScopeKey key = SiblingKey(dest);
  auto [it, created] = shapes_.try_emplace(key);
  if (created && !shared_learned_.empty()) {
    // Another node's lesson for these siblings (EndShapeProbe), held until they appeared here.
    auto shared = shared_learned_.find(key);
    if (shared != shared_learned_.end() &&
        shared->second.update.kind == LearnedUpdate::Kind::kBudget) {
      it->second.learned_burst = shared->second.update.budget.burst;
      it->second.confirmed = std::min(it->second.confirmed, it->second.learned_burst);
    }
  }
  return it->second;
}

Scheduler::SiblingShape* Scheduler::HoldToSiblings(const Dest& dest, Charge& leaf,
                                                   int64_t& probe_depth) {
  probe_depth = 0;
  if (leaf.params.depth <= 1 || (!stated_.empty() && stated_.contains(leaf.key))) {
    return nullptr;  // nothing to learn, or the platform states the leaf's window
  }
  SiblingShape& shape = ShapeOf(dest);
  if (shape.learned_burst > 0) {
    leaf.params.depth = std::min(leaf.params.depth, shape.learned_burst);
  }
  if (leaf.params.depth <= shape.confirmed) {
    return nullptr;
  }
  probe_depth = shape.confirmed + 1;
  leaf.params.depth = shape.confirmed;
  return &shape;
}

void Scheduler::ProbeSiblings(uint32_t d, SiblingShape& shape, std::span<Charge> charges,
                              int64_t probe_depth, int64_t now_ns, TakeResult& taken) {
  Dest& dest = dests_[d];
  if (shape.probe != kNil && shape.probe != d && shape.probe_until_ns > now_ns) {
    // Another sibling is trying the next level: wait for the meter at the confirmed level, or
    // for that probe's answer, whichever comes first.
    if (shape.waiting.size() < dests_.size()) {
      shape.waiting.push_back(d);
    }
    return;
  }
  charges[dest.leaf_index].params.depth = probe_depth;
  Result<TakeResult> probe = store_.TakeAll(charges, FromNanos(now_ns));
  if (!probe.has_value()) {
    return;  // the denial stands; the store is retried with the next evaluation
  }
  taken = *probe;
  if (taken.allowed) {
    shape.probe = d;
    shape.probe_level = probe_depth;
    shape.probe_until_ns = now_ns + kProbeTimeoutNs;
    dest.shape_probe = true;
  }
}

void Scheduler::EndShapeProbe(uint32_t d, bool accepted, bool throttled) {
  Dest& dest = dests_[d];
  dest.shape_probe = false;
  auto it = shapes_.find(SiblingKey(dest));
  if (it == shapes_.end()) {
    return;
  }
  SiblingShape& shape = it->second;
  if (shape.probe != d) {
    return;  // its probe timed out and another sibling's is out
  }
  shape.probe = kNil;
  if (accepted) {
    shape.confirmed = std::max(shape.confirmed, shape.probe_level);
  } else if (throttled) {
    shape.learned_burst = std::max<int64_t>(1, shape.probe_level - 1);
    shape.confirmed = std::min(shape.confirmed, shape.learned_burst);
    // Its own leaf learns it as well, and its bucket is empty now.
    LearnBurst(dest, shape.learned_burst);
    const uint32_t leaf = dest.scopes[dest.leaf_index];
    if (share_ != nullptr) {
      LearnedUpdate update;
      update.key = it->first;
      update.budget = scopes_.budget(leaf);
      update.budget.burst = shape.learned_burst;
      share_->Publish(update);
    }
  }
  WakeSiblings(shape);
}

void Scheduler::WakeSiblings(SiblingShape& shape) {
  for (const uint32_t d : shape.waiting) {
    Dest& sibling = dests_[d];
    if (sibling.live && sibling.state == State::kTimer) {
      ++sibling.generation;  // its timer no longer wakes it
      MakeReady(d);
    }
  }
  shape.waiting.clear();
}

uint8_t Scheduler::ParkIndex(const Dest& dest) {
  if (!dest.park_leaf_with_room || dest.retry_after_index == dest.leaf_index) {
    return dest.retry_after_index;
  }
  const uint32_t wide = dest.scopes[dest.retry_after_index];
  Result<MeterView> view = store_.Inspect(scopes_.at(wide).key, scopes_.params(wide), clock_.Now());
  if (view.has_value() && view->park == ParkKind::kNone && view->remaining > 0) {
    return dest.leaf_index;
  }
  return dest.retry_after_index;
}

}  // namespace egress::pacing
