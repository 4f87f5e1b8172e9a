#pragma once

#include <cstdint>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress::cli {

// A --since/--until value as Unix ms: RFC 3339 ("2026-12-01T10:00:00Z"), Unix ms ("1796119200000")
// or an age meaning that long before `now_ms` ("90s", "10m", "2h", "1d"). InvalidArgument naming
// the accepted forms otherwise; the caller adds the flag's name.
Result<int64_t> ParseTimeFlag(std::string_view text, int64_t now_ms);

}  // namespace egress::cli
