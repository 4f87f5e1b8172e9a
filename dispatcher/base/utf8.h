#pragma once

#include <string>
#include <string_view>

namespace egress {

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF).
bool IsValidUtf8(std::string_view text);

// The length (1 to 4) of the well-formed sequence starting at `text[i]`, or 0 when none starts
// there (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short
// by the end of `text`). Requires i < text.size().
size_t Utf8SequenceAt(std::string_view text, size_t i);

// `text` with every byte that does not start a well-formed sequence replaced by U+FFFD, for
// places that must emit valid UTF-8 (Prometheus label values) whatever they were given.
std::string ToValidUtf8(std::string_view text);

}  // namespace egress
