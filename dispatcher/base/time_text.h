#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress {

// Parses an RFC 3339 timestamp ("2026-12-01T10:00:00Z", "2026-12-01T11:00:00.250+01:00") to Unix
// ms. The offset is required; fractions past milliseconds are dropped. InvalidArgument, naming
// what is wrong, otherwise.
Result<int64_t> ParseRfc3339Millis(std::string_view text);

// Unix ms as RFC 3339 in UTC to the second, rounded up ("2026-12-01T10:00:01Z"), computed
// without the C library's time zone (a TZ on the host changes nothing). Clamped to the years
// 0001 to 9999.
std::string FormatRfc3339Seconds(int64_t unix_ms);

// A point in time as the API takes it: Unix ms (digits only) or RFC 3339. InvalidArgument
// otherwise.
Result<int64_t> ParseTimeMillis(std::string_view text);

}  // namespace egress
