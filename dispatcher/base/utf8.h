#pragma once

#include <string>
#include <string_view>

namespace egress {

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF).
bool IsValidUtf8(std::string_view text);

// `text` with every byte that does not start a well-formed sequence replaced by U+FFFD, for
// places that must emit valid UTF-8 (Prometheus label values) whatever they were given.
std::string ToValidUtf8(std::string_view text);

}  // namespace egress
