#pragma once

#include <string>

#include "dispatcher/base/clock.h"

namespace egress::sim {

// IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 section 5.6.7); sub-seconds dropped.
std::string FormatHttpDate(WallTime t);

}  // namespace egress::sim
