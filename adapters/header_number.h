#pragma once

#include <optional>
#include <string_view>

namespace egress::adapters {

// Reads a whole header value as a decimal number, leniently: optional whitespace around it, an
// optional sign, a fraction and an exponent ("65", "64.57", "-3", "+1", "1e3", ".5"). Anything
// else (trailing text, hex, "inf", "nan", overflow, a list "1, 2") is nullopt. Never throws.
std::optional<double> ParseHeaderNumber(std::string_view text);

}  // namespace egress::adapters
