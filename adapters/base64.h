#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace egress::adapters {

// Standard base64 (RFC 4648 section 4, alphabet with '+' and '/'), with '=' padding.
std::string Base64Encode(std::string_view bytes);

// Decodes standard base64. Missing trailing padding is accepted; any other character outside the
// alphabet, misplaced '=' or a length of 4n+1 gives nullopt.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace egress::adapters
