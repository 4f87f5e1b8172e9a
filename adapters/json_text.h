#pragma once

#include <string_view>

namespace egress::adapters {

// True when `text` is one JSON value (RFC 8259) with optional surrounding whitespace: the same
// verdict as nlohmann::json::accept(text) (a leading UTF-8 byte order mark allowed, strings
// valid UTF-8 with paired surrogate escapes, numbers finite as doubles, no depth limit), without
// building tokens: ~10x fewer instructions, and the webhook adapter checks every attempt's body.
// One difference, stricter: a raw NUL byte is never JSON here, while nlohmann takes it for the
// end of the input (accepting "[1]\0junk").
bool IsJsonText(std::string_view text);

}  // namespace egress::adapters
