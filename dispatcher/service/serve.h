#pragma once

#include "dispatcher/service/service.h"

namespace egress::service {

// Runs the service until SIGTERM or SIGINT, then drains (in-flight attempts get `grace`) and
// closes the store. Prints "listening <address>" on stdout once ready. Returns the exit code:
// 0 after a clean shutdown, 3 when the store or the listener cannot be opened.
int RunService(ServiceOptions options, Millis grace = Millis(10'000));

}  // namespace egress::service
