#include <algorithm>

#include <fmt/format.h>

#include "dispatcher/pacing/scheduler.h"

// Scheduler: settings applied at run time: enabled state, budgets (defaults, overrides, the
// Discord global's shape), tenant weights and in-flight caps.
namespace egress::pacing {

namespace {

constexpr uint32_t kNil = ScopeTable::kNil;

}  // namespace

Budget Scheduler::Shape(BudgetName name, Budget budget) const {
  if (((name == BudgetName::kDiscordGlobal && options_.discord_global_window) ||
       windowed_names_[static_cast<size_t>(name)]) &&
      budget.limit <= SlidingWindow::kMaxLimit) {
    // Twice the limit: the meter (paced under the margin) never holds a run of windows back,
    // and over a long run it still paces at the limit less the margin.
    budget.burst = std::min<int64_t>(2 * budget.limit, kMaxBudgetBurst);
  }
  return budget;
}

bool Scheduler::Windowed(uint32_t scope) const {
  const BudgetName name = scopes_.name(scope);
  return ((name == BudgetName::kDiscordGlobal && options_.discord_global_window) ||
          windowed_names_[static_cast<size_t>(name)]) &&
         scopes_.budget(scope).limit <= SlidingWindow::kMaxLimit;
}

Status Scheduler::Disable(DestinationId id, std::string reason) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  (*found)->disabled = true;
  disabled_reasons_[id.value] = std::move(reason);
  Rehold(id.value);
  return Status::Ok();
}

Status Scheduler::Enable(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  (*found)->disabled = false;
  disabled_reasons_.erase(id.value);
  Rehold(id.value);
  return Status::Ok();
}

Status Scheduler::Pause(DestinationId id, std::string why) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  (*found)->paused = true;
  paused_reasons_[id.value] = std::move(why);
  Rehold(id.value);
  return Status::Ok();
}

Status Scheduler::Resume(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  (*found)->paused = false;
  paused_reasons_.erase(id.value);
  Rehold(id.value);
  return Status::Ok();
}

void Scheduler::Rehold(uint32_t d) {
  Dest& dest = dests_[d];
  const bool held = dest.disabled || dest.paused;
  // A head waiting on time or for an outcome is held now; one in a FIFO (ready, a scope's, a
  // connection's) is held, or not, when next evaluated, before it could go.
  if (held && (dest.state == State::kTimer || dest.state == State::kBlocked)) {
    ++dest.generation;
    dest.state = State::kDisabled;
  }
  if (dest.state != State::kDisabled) {
    return;
  }
  if (!held) {
    if (dest.has_head) {
      MakeReady(d);
    } else {
      dest.state = State::kEmpty;
    }
    return;
  }
  dest.reason = dest.disabled ? DeferReason::kDestinationDisabled : DeferReason::kPaused;
  if (!dest.disabled && dest.has_head) {
    TellPaused(d);  // held by the pause alone now
  }
}

void Scheduler::TellPaused(uint32_t d) {
  if (!wait_observer_) {
    return;
  }
  Deferral wait{.reason = DeferReason::kPaused};
  if (auto it = paused_reasons_.find(d); it != paused_reasons_.end()) {
    wait.detail = it->second;
  }
  wait_observer_(DestinationId{d}, wait);
}

Status Scheduler::SetTenantBudgets(const std::string& tenant,
                                   const std::vector<std::pair<BudgetName, Budget>>& overrides) {
  Status status = budgets_.SetOverrides(tenant, overrides);
  if (!status.ok()) {
    return status;
  }
  ApplyBudgets(TenantIndex(tenant));
  return Status::Ok();
}

Status Scheduler::SetDefaultBudgets(const std::vector<std::pair<BudgetName, Budget>>& defaults) {
  for (const auto& [name, budget] : defaults) {
    if (budget.limit <= 0 || budget.scale_ms <= 0 || budget.burst <= 0) {
      return Status::InvalidArgument(fmt::format(
          "budget {}: limit, scale_ms and burst must be positive", BudgetNameString(name)));
    }
  }
  for (const auto& [name, budget] : defaults) {
    if (Status status = budgets_.SetDefault(name, budget); !status.ok()) {
      return status;
    }
  }
  ApplyBudgets(std::nullopt);
  return Status::Ok();
}

void Scheduler::ApplyBudgets(std::optional<uint32_t> tenant) {
  const SteadyTime now = clock_.Now();
  std::vector<bool> repaced(scopes_.slot_limit(), false);
  for (uint32_t i = 0; i < scopes_.slot_limit(); ++i) {
    const ScopeTable::Slot& slot = scopes_.at(i);
    if (slot.refs == 0 || (tenant.has_value() && slot.tenant != *tenant)) {
      continue;
    }
    const Budget effective =
        Shape(scopes_.name(i), budgets_.Effective(tenants_[slot.tenant].name, scopes_.name(i)));
    if (slot.learned == 0) {
      const GcraParams before = scopes_.params(i);
      scopes_.SetBudget(i, effective, false);
      repaced[i] = RepaceScope(i, before, now);
      continue;
    }
    // A pace lowered under a configured budget follows the new one as its ceiling.
    auto it = adaptive_.find(slot.key);
    if (it != adaptive_.end() && !it->second.ceiling_learned()) {
      it->second.SetCeiling(effective);
      const GcraParams before = scopes_.params(i);
      if (it->second.at_ceiling()) {
        scopes_.SetBudget(i, effective, false);
        adaptive_.erase(it);
      } else {
        scopes_.SetBudget(i, it->second.Current(), true);
      }
      repaced[i] = RepaceScope(i, before, now);
    }
  }
  // A scope with one destination holds it on that destination's own timer, not a wait list.
  for (uint32_t d = 0; d < dests_.size(); ++d) {
    const Dest& dest = dests_[d];
    if ((tenant.has_value() && dest.tenant != *tenant) || dest.state != State::kTimer ||
        (dest.reason != DeferReason::kBudget && dest.reason != DeferReason::kBulkShare)) {
      continue;
    }
    for (uint8_t k = 0; k < dest.scope_count; ++k) {
      if (repaced[dest.scopes[k]]) {
        MakeReady(d);
        break;
      }
    }
  }
}

bool Scheduler::RepaceScope(uint32_t scope, const GcraParams& before, SteadyTime now) {
  const GcraParams& after = scopes_.params(scope);
  if (after == before) {
    return false;
  }
  // A store that cannot be reached keeps the old debt; the next charge paces at the new rate.
  store_.Rescale(scopes_.at(scope).key, before, after, now).IgnoreError();
  if (!scopes_.at(scope).waiting.empty()) {
    ArmScope(scope, ToNanos(now));  // its waiters are looked at again on the next Next()
  }
  return true;
}

Status Scheduler::SetTenantWeight(const std::string& tenant, uint32_t weight) {
  if (weight == 0) {
    return Status::InvalidArgument("tenant weight must be > 0");
  }
  const uint32_t t = TenantIndex(tenant);
  tenants_[t].weight = weight;
  conns_.SetWeight(t, weight);
  return Status::Ok();
}

Status Scheduler::SetTenantMaxInFlight(const std::string& tenant, int max_in_flight) {
  if (max_in_flight < 0) {
    return Status::InvalidArgument("tenant max_in_flight must be >= 0");
  }
  tenants_[TenantIndex(tenant)].max_in_flight = max_in_flight;
  return Status::Ok();
}

}  // namespace egress::pacing
