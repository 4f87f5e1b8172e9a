#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace egress {

// W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/, section 3.2):
// "<version>-<trace-id>-<parent-id>-<flags>", lowercase hex, 2-32-16-2 digits. Returns the value
// as version 00 (what this service stores and sends), or nullopt when `text` is not one: a
// version other than 2 hex digits or "ff", a version 00 that is not exactly 55 characters, a
// later version whose first 55 characters are not followed by '-' or the end, an all-zero
// trace-id or parent-id, upper-case or non-hex digits. Never reads past `text`.
std::optional<std::string> NormalizeTraceparent(std::string_view text);

}  // namespace egress
