#pragma once

// nlohmann::json helpers for the adapters' .cc files only; keep this header out of other headers
// (CONTRIBUTING.md). Nothing here throws: parsing uses json::parse(text, nullptr, false).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dispatcher/base/result.h"

namespace egress::adapters {

// The deepest nesting of objects and arrays these functions parse (intake allows at most
// server.max_json_depth, itself at most this): deeper text is refused before a tree is built.
inline constexpr size_t kMaxJsonDepth = 512;

// `text` parsed as a JSON object. InvalidArgument "<what> is not a JSON object" otherwise, or
// "<what> is nested deeper than 512 levels" (a stored record from before the intake bound).
Result<nlohmann::json> ParseJsonObject(std::string_view text, std::string_view what);

// `text` parsed as JSON of any kind, or nullopt for garbage or text nested deeper than
// kMaxJsonDepth (a platform's response body).
std::optional<nlohmann::json> ParseJsonLenient(std::string_view text);

// The field `key` of `object` when it is a string (nullopt when absent, of another type, or
// `object` is not an object).
std::optional<std::string> StringField(const nlohmann::json& object, std::string_view key);

// The field `key` when it is a number (integer or float).
std::optional<double> NumberField(const nlohmann::json& object, std::string_view key);

// The field `key` when it is an integer.
std::optional<int64_t> IntegerField(const nlohmann::json& object, std::string_view key);

// The field `key` when it is a boolean.
std::optional<bool> BoolField(const nlohmann::json& object, std::string_view key);

// The value at JSON pointer `pointer` (RFC 6901: "" is the whole document, "/a/0/b~1c" walks
// member "a", element 0, member "b/c") or null when there is none. Never throws.
const nlohmann::json* AtPointer(const nlohmann::json& document, std::string_view pointer);

// True for "" and text starting with '/' whose "~" escapes are ~0 or ~1 (RFC 6901).
bool IsJsonPointer(std::string_view pointer);

// `object` serialised compactly. Invalid UTF-8 in strings is replaced, never thrown.
std::string DumpJson(const nlohmann::json& object);

}  // namespace egress::adapters
