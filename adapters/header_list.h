#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace egress::adapters {

// One member of a comma-separated header value, read leniently enough for every RateLimit draft:
//   "default";r=50;t=30   String item with parameters (draft-09 and later)
//   default;r=50;t=30     token, i.e. a Dictionary key (draft-08)
//   100;w=60              Integer item (draft-06 and earlier)
//   limit=100             Dictionary member with a value (draft-07)
// Views point into the parsed text, which must outlive the member.
struct HeaderListMember {
  std::string_view name;         // String contents (escapes kept) or token; empty for numbers.
  std::string_view value;        // After '=' in the "key=value" form; empty otherwise.
  std::optional<double> number;  // The bare numeric item, if the member is one.
  std::vector<std::pair<std::string_view, std::string_view>> params;  // ";k=v", raw v.

  // The raw value of parameter `key` (the first one wins), or nullopt.
  std::optional<std::string_view> Param(std::string_view key) const;
};

// Splits at commas outside double quotes; members without a usable head (empty, inner lists,
// unterminated strings) are skipped. At most kMaxHeaderListMembers are returned. Never throws.
std::vector<HeaderListMember> ParseHeaderList(std::string_view text);

inline constexpr size_t kMaxHeaderListMembers = 64;

}  // namespace egress::adapters
