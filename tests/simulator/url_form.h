#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace egress::sim {

// Decodes %XX escapes (RFC 3986 section 2.1); with `plus_is_space` also '+' as a space, as in
// application/x-www-form-urlencoded. nullopt for a '%' not followed by two hex digits.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// The fields of an application/x-www-form-urlencoded body ("a=1&b=x%20y"), decoded. A field
// without '=' has an empty value; empty fields ("a=1&&b=2") are skipped; when a name repeats,
// the first one counts. nullopt when any name or value has a malformed escape.
std::optional<std::map<std::string, std::string>> ParseForm(std::string_view body);

}  // namespace egress::sim
