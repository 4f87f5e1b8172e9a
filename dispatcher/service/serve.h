#pragma once

#include <functional>

#include "dispatcher/service/service.h"

namespace egress::service {

// Runs the service until SIGTERM or SIGINT, then drains (in-flight attempts get `grace`) and
// closes the store. Prints "listening <address>" on stdout once ready. SIGHUP reads the
// credential references again and, when `reload_budgets` is set, the budgets' defaults through
// it (Service::ReloadBudgets; it runs on a pool thread). Returns the exit code: 0 after a clean
// shutdown, 3 when the store or the listener cannot be opened.
int RunService(ServiceOptions options, Millis grace = Millis(10'000),
               std::function<Result<Service::BudgetDefaults>()> reload_budgets = {});

}  // namespace egress::service
