#include <algorithm>

#include "dispatcher/pacing/scheduler.h"

// Scheduler: what responses teach a destination's own key, shared with the other nodes that
// share its budgets (docs/pacing.md, "Shared learning"). The meters and parks themselves are
// shared by the BudgetStore.
namespace egress::pacing {

namespace {

constexpr uint32_t kNil = ScopeTable::kNil;

// The budgets a destination's own key is metered under: the only ones responses change. A
// profile platform's budgets (numbered past the compiled-in ones) may be; an update names the
// key it was learned on, so only that key takes it.
bool IsOwnKey(BudgetName name) {
  return name == BudgetName::kWebhookDestination || name == BudgetName::kSlackChannel ||
         name == BudgetName::kDiscordRoute || name == BudgetName::kLineChannel ||
         static_cast<int>(name) >= kBudgetNameCount;
}

}  // namespace

void Scheduler::ShareLeaf(uint32_t leaf) {
  if (share_ == nullptr) {
    return;
  }
  LearnedUpdate update;
  update.key = scopes_.at(leaf).key;
  // What this node learned is newer than what another node said of the key before.
  shared_learned_.erase(update.key);
  if (auto it = adaptive_.find(update.key); it != adaptive_.end()) {
    update.budget = it->second.Current();
    update.adaptive = true;
    update.probing = it->second.probing();
    const int64_t now_ns = ToNanos(clock_.Now());
    const int64_t hold_until = it->second.hold_until_ns();
    if (hold_until > now_ns) {
      // A failed probe holds for a window, which may be longer than max_park: the others
      // accept holds up to max_park.
      update.hold = std::min(CeilMillis(hold_until - now_ns), options_.adaptive.max_park);
    }
  } else if (scopes_.learned(leaf)) {
    update.budget = scopes_.budget(leaf);
  } else {
    update.kind = LearnedUpdate::Kind::kForget;
  }
  share_->Publish(update);
}

Status Scheduler::ApplyLearned(const LearnedUpdate& update, Millis age) {
  if (age < Millis(0)) {
    return Status::InvalidArgument("shared learned update from the future");
  }
  if (age >= kSharedLearnedTtl) {
    return Status::Ok();  // too old to hold
  }
  switch (update.kind) {
    case LearnedUpdate::Kind::kDiscordBucket: {
      auto it = discord_buckets_.find(update.key);
      if (it == discord_buckets_.end()) {
        if (discord_buckets_.size() >= kMaxSharedLearned) {
          return Status::Busy("too many shared Discord buckets held");
        }
        discord_buckets_.emplace(update.key, update.bucket);
        ++discord_epoch_;
      } else if (it->second != update.bucket) {
        it->second = update.bucket;
        ++discord_epoch_;
      }
      return Status::Ok();
    }
    case LearnedUpdate::Kind::kBudget:
      if (!update.budget.Valid()) {
        return Status::InvalidArgument("shared learned budget out of range");
      }
      if (update.hold < Millis(0) || update.hold > options_.adaptive.max_park) {
        return Status::InvalidArgument("shared adaptive hold out of range");
      }
      break;
    case LearnedUpdate::Kind::kForget:
      break;
    default:
      return Status::InvalidArgument("unknown shared learned update");
  }
  LearnedUpdate aged = update;
  aged.hold = std::max(Millis(0), update.hold - age);
  const int64_t now_ns = ToNanos(clock_.Now());
  const int64_t received_ns = now_ns - Nanos(age).count();
  if (auto shape = shapes_.find(update.key);
      shape != shapes_.end() && update.kind == LearnedUpdate::Kind::kBudget) {
    // Siblings' burst (EndShapeProbe): every leaf of the group keeps to it from now on.
    shape->second.learned_burst = update.budget.burst;
    shape->second.confirmed = std::min(shape->second.confirmed, update.budget.burst);
  }
  const uint32_t scope = scopes_.Find(update.key);
  if (scope != kNil && IsOwnKey(scopes_.name(scope))) {
    AdoptShared(scope, aged, now_ns);
  }
  if (update.kind == LearnedUpdate::Kind::kForget) {
    shared_learned_.erase(update.key);
  } else if (auto it = shared_learned_.find(update.key); it != shared_learned_.end()) {
    it->second = SharedLearned{aged, received_ns};
  } else if (shared_learned_.size() >= kMaxSharedLearned) {
    return Status::Busy("too many shared learned budgets held");
  } else {
    shared_learned_.emplace(update.key, SharedLearned{aged, received_ns});
  }
  return Status::Ok();
}

void Scheduler::AdoptShared(uint32_t scope, const LearnedUpdate& update, int64_t now_ns) {
  const ScopeKey key = scopes_.at(scope).key;
  const BudgetName name = scopes_.name(scope);
  const auto configured = [&] {
    return Shape(name, budgets_.Effective(tenants_[scopes_.at(scope).tenant].name, name));
  };
  if (update.kind == LearnedUpdate::Kind::kForget) {
    adaptive_.erase(key);
    stated_.erase(key);
    if (scopes_.learned(scope)) {
      scopes_.SetBudget(scope, configured(), false);
    }
    return;
  }
  if (!update.adaptive) {
    adaptive_.erase(key);
    scopes_.SetBudget(scope, update.budget, true);
    return;
  }
  auto it = adaptive_.find(key);
  if (it == adaptive_.end()) {
    if (update.budget.limit >= scopes_.budget(scope).limit) {
      return;  // nothing lowered below what this node paces to
    }
    it =
        adaptive_.try_emplace(key, options_.adaptive, scopes_.budget(scope), scopes_.learned(scope))
            .first;
  }
  AdaptivePace& pace = it->second;
  pace.Adopt(update.budget.limit, update.probing, now_ns + Nanos(update.hold).count(), now_ns);
  if (pace.at_ceiling()) {
    scopes_.SetBudget(scope, pace.ceiling(), pace.ceiling_learned());
    adaptive_.erase(it);
    return;
  }
  scopes_.SetBudget(scope, pace.Current(), true);
}

void Scheduler::AdoptPendingShared(uint32_t scope) {
  // Only a key new here: one in use took every update as it came, and has learned since.
  if (shared_learned_.empty() || scopes_.at(scope).refs != 1 || scopes_.learned(scope) ||
      !IsOwnKey(scopes_.name(scope))) {
    return;
  }
  auto it = shared_learned_.find(scopes_.at(scope).key);
  if (it == shared_learned_.end()) {
    return;
  }
  const int64_t now_ns = ToNanos(clock_.Now());
  const int64_t age_ns = now_ns - it->second.received_ns;
  if (age_ns >= Nanos(kSharedLearnedTtl).count()) {
    shared_learned_.erase(it);
    return;
  }
  LearnedUpdate update = it->second.update;
  // The hold counts from when the update came.
  update.hold = std::max(Millis(0), update.hold - Millis(age_ns / 1'000'000));
  AdoptShared(scope, update, now_ns);
}

}  // namespace egress::pacing
