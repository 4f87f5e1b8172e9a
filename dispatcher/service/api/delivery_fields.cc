#include "dispatcher/service/api/delivery_fields.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include <fmt/format.h>

#include "adapters/json_reader.h"
#include "adapters/line_adapter.h"
#include "dispatcher/base/platform.h"

namespace egress::service {
namespace {

ApiError Bad(std::string field, std::string problem, int status = 400,
             std::string code = "invalid_request") {
  return ApiError{status, std::move(code), fmt::format("{}: {}", field, problem), field};
}

using Kind = RequestField::Kind;

// Reads an optional string field; false (with `err`) when present but not a string.
bool OptionalString(RequestField& field, const char* name, std::string& out, ApiError& err) {
  if (field.kind == Kind::kAbsent || field.kind == Kind::kNull) {
    return true;
  }
  if (field.kind != Kind::kString) {
    err = Bad(name, "must be a string");
    return false;
  }
  out = std::move(field.text);
  return true;
}

bool RequiredString(RequestField& field, const char* name, std::string& out, ApiError& err) {
  if (!OptionalString(field, name, out, err)) {
    return false;
  }
  if (out.empty()) {
    err = Bad(name, "required");
    return false;
  }
  return true;
}

// The value `reader` is at as a field: strings decoded, integers read, an object's text kept
// (compacted) only when `keep_object`.
bool ReadField(adapters::JsonReader& reader, RequestField& f, bool keep_object) {
  f.text.clear();
  f.depth = 0;
  switch (reader.Peek()) {
    case '"':
      f.kind = Kind::kString;
      return reader.ReadString(f.text);
    case 'n':
      f.kind = Kind::kNull;
      return reader.SkipValue();
    case '{': {
      f.kind = Kind::kObject;
      std::string_view span;
      bool spaced = false;
      if (!reader.SkipValue(&span, &spaced, &f.depth)) {
        return false;
      }
      if (keep_object) {
        f.text = spaced ? adapters::CompactJson(span) : std::string(span);
      }
      return true;
    }
    default: {
      std::string_view span;
      if (!reader.SkipValue(&span)) {
        return false;
      }
      // nlohmann reads an integer that fits int64_t as one (and larger ones as unsigned or
      // double, which the cost check refuses all the same).
      auto [end, ec] = std::from_chars(span.data(), span.data() + span.size(), f.integer);
      f.kind =
          ec == std::errc() && end == span.data() + span.size() ? Kind::kInteger : Kind::kOther;
      return true;
    }
  }
}

ApiError MalformedJson() { return ApiError{400, "malformed_json", "body: not valid JSON"}; }

ApiError NoDeliveriesArray() {
  return ApiError{400, "invalid_request", "deliveries: required, an array", "deliveries"};
}

}  // namespace

bool ReadDeliveryFields(adapters::JsonReader& reader, DeliveryFields& out) {
  out = DeliveryFields();
  if (reader.Peek() != '{') {
    out.is_object = false;
    return reader.SkipValue();
  }
  reader.EnterObject();
  std::string key;
  while (reader.NextKey(key)) {
    // A repeated key: the last one counts, as in nlohmann's tree.
    RequestField* field = key == "tenant"            ? &out.tenant
                          : key == "platform"        ? &out.platform
                          : key == "destination"     ? &out.destination
                          : key == "credential"      ? &out.credential
                          : key == "payload"         ? &out.payload
                          : key == "idempotency_key" ? &out.idempotency_key
                          : key == "ordering_key"    ? &out.ordering_key
                          : key == "cost"            ? &out.cost
                          : key == "priority"        ? &out.priority
                                                     : nullptr;
    if (!(field != nullptr ? ReadField(reader, *field, field == &out.payload)
                           : reader.SkipValue())) {
      return false;
    }
  }
  return !reader.failed();
}

tl::expected<DeliveryFields, ApiError> ReadDeliveryBody(std::string_view body) {
  adapters::JsonReader reader(body);
  DeliveryFields fields;
  if (!reader.SkipByteOrderMark() || !ReadDeliveryFields(reader, fields) || !reader.AtEnd()) {
    return tl::unexpected(MalformedJson());
  }
  return fields;
}

tl::expected<std::vector<DeliveryFields>, ApiError> ReadBatchBody(std::string_view body,
                                                                  size_t max_items) {
  adapters::JsonReader reader(body);
  if (!reader.SkipByteOrderMark()) {
    return tl::unexpected(MalformedJson());
  }
  if (reader.Peek() != '{') {
    // Valid JSON of another kind is a misshapen request; anything else is not JSON.
    return reader.SkipValue() && reader.AtEnd() ? tl::unexpected(NoDeliveriesArray())
                                                : tl::unexpected(MalformedJson());
  }
  reader.EnterObject();
  std::vector<DeliveryFields> items;
  bool is_array = false;  // the last "deliveries" member is an array (a repeated key: the last)
  bool over = false;      // ...of more than max_items items
  std::string key;
  while (reader.NextKey(key)) {
    if (key != "deliveries") {
      if (!reader.SkipValue()) {
        break;
      }
      continue;
    }
    items.clear();
    over = false;
    is_array = reader.Peek() == '[';
    if (!is_array) {
      if (!reader.SkipValue()) {
        break;
      }
      continue;
    }
    reader.EnterArray();
    items.reserve(std::min(max_items, body.size() / 64 + 1));
    while (reader.NextElement()) {
      // Past the cap the rest is only checked, never held: memory stays bounded by max_items.
      if (items.size() == max_items) {
        over = true;
        if (!reader.SkipValue()) {
          break;
        }
        continue;
      }
      if (!ReadDeliveryFields(reader, items.emplace_back())) {
        break;
      }
    }
  }
  if (reader.failed() || !reader.AtEnd()) {
    return tl::unexpected(MalformedJson());
  }
  if (!is_array) {
    return tl::unexpected(NoDeliveriesArray());
  }
  if (over || items.empty()) {
    return tl::unexpected(ApiError{413, "batch_too_large",
                                   fmt::format("deliveries: 1 to {} items per batch", max_items),
                                   "deliveries"});
  }
  return items;
}

tl::expected<storage::NewDelivery, ApiError> CheckDeliveryFields(
    DeliveryFields&& f, const IntakeLimits& limits, const adapters::AdapterRegistry& adapters) {
  if (!f.is_object) {
    return tl::unexpected(ApiError{400, "invalid_request", "body: must be a JSON object"});
  }
  storage::NewDelivery d;
  ApiError err;
  if (!RequiredString(f.tenant, "tenant", d.tenant, err) ||
      !RequiredString(f.platform, "platform", d.platform, err)) {
    return tl::unexpected(err);
  }
  const std::optional<Platform> platform = ParsePlatform(d.platform);
  const adapters::PlatformAdapter* adapter = platform ? adapters.Get(*platform) : nullptr;
  if (adapter == nullptr) {
    std::string known;
    for (const Platform p : adapters.platforms()) {
      known += known.empty() ? "" : ", ";
      known += PlatformString(p);
    }
    return tl::unexpected(
        Bad("platform",
            d.platform.size() <= 64
                ? fmt::format("unknown platform '{}' ({})", d.platform, known)
                : fmt::format("unknown platform ({} bytes; {})", d.platform.size(), known),
            422, "unknown_platform"));
  }
  if (!RequiredString(f.destination, "destination", d.destination, err) ||
      !RequiredString(f.credential, "credential", d.credential, err) ||
      !OptionalString(f.idempotency_key, "idempotency_key", d.idempotency_key, err) ||
      !OptionalString(f.ordering_key, "ordering_key", d.ordering_key, err)) {
    return tl::unexpected(err);
  }
  if (Status shape = adapter->CheckDestination(d.destination); !shape.ok()) {
    return tl::unexpected(Bad("destination", shape.message(), 422, "invalid_destination"));
  }
  if (f.payload.kind != Kind::kObject) {
    return tl::unexpected(Bad("payload", "required, a JSON object (the platform's native body)"));
  }
  if (f.payload.depth > limits.max_json_depth) {
    return tl::unexpected(
        Bad("payload", fmt::format("nested {} deep; at most {} levels of objects and arrays",
                                   f.payload.depth, limits.max_json_depth)));
  }
  d.payload = std::move(f.payload.text);
  if (d.payload.size() > limits.max_payload_bytes) {
    return tl::unexpected(Bad(
        "payload",
        fmt::format("{} bytes is over the limit of {}", d.payload.size(), limits.max_payload_bytes),
        413, "payload_too_large"));
  }
  if (f.cost.kind != Kind::kAbsent && f.cost.kind != Kind::kNull) {
    if (f.cost.kind != Kind::kInteger || f.cost.integer < 1 || f.cost.integer > limits.max_cost) {
      return tl::unexpected(
          Bad("cost", fmt::format("must be an integer from 1 to {}", limits.max_cost)));
    }
    d.cost = static_cast<uint32_t>(f.cost.integer);
  }
  if (f.priority.kind != Kind::kAbsent && f.priority.kind != Kind::kNull) {
    const std::optional<pacing::Priority> priority =
        f.priority.kind == Kind::kString ? pacing::ParsePriority(f.priority.text) : std::nullopt;
    if (!priority) {
      return tl::unexpected(Bad("priority", "must be \"high\", \"normal\" or \"bulk\""));
    }
    d.priority = *priority;
  }
  return d;
}

tl::expected<std::vector<storage::NewDelivery>, ApiError> SplitDelivery(storage::NewDelivery d) {
  std::vector<storage::NewDelivery> out;
  // The payload has no whitespace between tokens, so a "to" array reads `"to":[` unless the key
  // is spelled with escapes; anything else is not a multicast and needs no parse.
  if (d.platform != "line" || (d.payload.find("\"to\":[") == std::string::npos &&
                               d.payload.find("\\u") == std::string::npos)) {
    out.push_back(std::move(d));
    return out;
  }
  Result<std::vector<std::string>> parts = adapters::SplitLineMulticast(d.payload);
  if (!parts.has_value()) {
    return tl::unexpected(Bad("payload.to", parts.error().message()));
  }
  if (parts->size() == 1) {
    out.push_back(std::move(d));
    return out;
  }
  out.reserve(parts->size());
  for (size_t i = 0; i < parts->size(); ++i) {
    storage::NewDelivery part = d;
    part.payload = std::move((*parts)[i]);
    if (!d.idempotency_key.empty()) {
      part.idempotency_key = fmt::format("{}#{}", d.idempotency_key, i);
    }
    out.push_back(std::move(part));
  }
  return out;
}

}  // namespace egress::service
