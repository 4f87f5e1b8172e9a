#pragma once

#include <map>
#include <string>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/gcra_meter.h"

namespace egress::service {

// Meters each tenant's intake (budget tenant_intake) with GCRA, with a burst of the whole limit
// (a tenant may send its limit at once, then at the budget's pace). Loop thread only.
class IntakeLimiter {
 public:
  IntakeLimiter(const Clock& clock, pacing::Budget default_budget);

  struct Decision {
    bool allowed = true;
    pacing::Budget budget;
    int64_t remaining = 0;
    Millis retry_after{0};
    Millis reset_after{0};
  };
  // Takes `units` of the tenant's intake budget, or nothing when they do not fit.
  Decision Take(const std::string& tenant, int64_t units);
  // Replaces the tenant's budget (an operator override); nullopt restores the default.
  void SetBudget(const std::string& tenant, std::optional<pacing::Budget> budget);
  // Replaces the default (a config reload): every tenant without an override whose budget
  // changes starts on the new one with a full meter.
  void SetDefaultBudget(pacing::Budget budget);

 private:
  struct Tenant {
    pacing::Budget budget;
    int64_t tat_ns = 0;
    bool overridden = false;  // SetBudget gave it its own
  };
  const Clock& clock_;
  pacing::Budget default_budget_;
  std::map<std::string, Tenant> tenants_;
};

}  // namespace egress::service
