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

}  // namespace egress::adapters
