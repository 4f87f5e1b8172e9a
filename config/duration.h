#pragma once

#include <string>
#include <string_view>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"

namespace egress::config {

// Parses a config duration: a non-negative integer followed by a unit, `ms`, `s`, `m`, `h` or
// `d` (24 hours) ("250ms", "5s", "30m", "2h", "7d", "0s"). No sign, spaces, fractions or compound
// forms. InvalidArgument naming the problem (empty, negative, missing number, unknown or missing
// unit, too large for 64-bit milliseconds); the message does not repeat the field name.
Result<Millis> ParseDuration(std::string_view text);

// The shortest exact form ParseDuration reads back: "0s", "250ms", "5s", "30m", "2h", "7d".
std::string FormatDuration(Millis duration);

}  // namespace egress::config
