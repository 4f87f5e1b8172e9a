#pragma once

#include <cstdint>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress {

// Parses an RFC 3339 timestamp ("2026-12-01T10:00:00Z", "2026-12-01T11:00:00.250+01:00") to Unix
// ms. The offset is required; fractions past milliseconds are dropped. InvalidArgument, naming
// what is wrong, otherwise.
Result<int64_t> ParseRfc3339Millis(std::string_view text);

// A point in time as the API takes it: Unix ms (digits only) or RFC 3339. InvalidArgument
// otherwise.
Result<int64_t> ParseTimeMillis(std::string_view text);

}  // namespace egress
