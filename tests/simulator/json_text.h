#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace egress::sim {

// JSON text that never throws: invalid UTF-8 (e.g. from a URL path or header) is replaced.
inline std::string JsonText(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A string member of `obj`, or `fallback` when absent or of another type (never throws).
inline std::string StringField(const nlohmann::json& obj, std::string_view key,
                               std::string fallback = "") {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// A boolean member of `obj`; false when absent or of another type.
inline bool BoolField(const nlohmann::json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace egress::sim
