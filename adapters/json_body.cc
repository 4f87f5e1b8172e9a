#include "adapters/json_body.h"

#include "adapters/json_reader.h"

namespace egress::adapters {
namespace {

using nlohmann::json;

// nlohmann parses without recursion but serialises (dump) with it: a tree deeper than this is
// never built, so no later dump can exhaust the stack. Measured without recursion first.
bool WithinDepth(std::string_view text) {
  JsonReader reader(text);
  size_t depth = 0;
  reader.SkipByteOrderMark();
  return !reader.SkipValue(nullptr, nullptr, &depth) || depth <= kMaxJsonDepth;
}

const json* Field(const json& object, std::string_view key) {
  if (!object.is_object()) {
    return nullptr;
  }
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

}  // namespace

Result<json> ParseJsonObject(std::string_view text, std::string_view what) {
  if (!WithinDepth(text)) {
    return Status::InvalidArgument(std::string(what) + " is nested deeper than " +
                                   std::to_string(kMaxJsonDepth) + " levels");
  }
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status::InvalidArgument(std::string(what) + " is not a JSON object");
  }
  return parsed;
}

std::optional<json> ParseJsonLenient(std::string_view text) {
  if (!WithinDepth(text)) {
    return std::nullopt;
  }
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    return std::nullopt;
  }
  return parsed;
}

std::optional<std::string> StringField(const json& object, std::string_view key) {
  const json* f = Field(object, key);
  if (f == nullptr || !f->is_string()) {
    return std::nullopt;
  }
  return f->get<std::string>();
}

std::optional<double> NumberField(const json& object, std::string_view key) {
  const json* f = Field(object, key);
  if (f == nullptr || !f->is_number()) {
    return std::nullopt;
  }
  return f->get<double>();
}

std::optional<int64_t> IntegerField(const json& object, std::string_view key) {
  const json* f = Field(object, key);
  if (f == nullptr || !f->is_number_integer()) {
    return std::nullopt;
  }
  return f->get<int64_t>();
}

std::optional<bool> BoolField(const json& object, std::string_view key) {
  const json* f = Field(object, key);
  if (f == nullptr || !f->is_boolean()) {
    return std::nullopt;
  }
  return f->get<bool>();
}

std::string DumpJson(const json& object) {
  return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsJsonPointer(std::string_view pointer) {
  if (pointer.empty()) {
    return true;
  }
  if (pointer[0] != '/') {
    return false;
  }
  for (size_t i = 0; i < pointer.size(); ++i) {
    if (pointer[i] == '~' &&
        (i + 1 >= pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1'))) {
      return false;
    }
  }
  return true;
}

const nlohmann::json* AtPointer(const nlohmann::json& document, std::string_view pointer) {
  if (!IsJsonPointer(pointer)) {
    return nullptr;
  }
  const nlohmann::json* at = &document;
  while (!pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    const size_t end = pointer.find('/');
    const std::string_view raw = pointer.substr(0, end);
    pointer = end == std::string_view::npos ? std::string_view() : pointer.substr(end);
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~') {
        token.push_back(raw[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        token.push_back(raw[i]);
      }
    }
    if (at->is_object()) {
      auto it = at->find(token);
      if (it == at->end()) {
        return nullptr;
      }
      at = &*it;
    } else if (at->is_array()) {
      if (token.empty() || token.size() > 9 || (token.size() > 1 && token[0] == '0')) {
        return nullptr;
      }
      size_t index = 0;
      for (char c : token) {
        if (c < '0' || c > '9') {
          return nullptr;
        }
        index = index * 10 + static_cast<size_t>(c - '0');
      }
      if (index >= at->size()) {
        return nullptr;
      }
      at = &(*at)[index];
    } else {
      return nullptr;
    }
  }
  return at;
}

}  // namespace egress::adapters
