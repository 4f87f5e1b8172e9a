#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace egress::storage {

// Hashes std::string and std::string_view alike. With std::equal_to<> it lets an
// unordered_map keyed by std::string be searched with a view, building no key string.
struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
};

}  // namespace egress::storage
