#include "dispatcher/service/api/delivery_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "adapters/json_reader.h"
#include "adapters/line_adapter.h"
#include "dispatcher/pacing/scope_path.h"

namespace egress::service {
namespace {

using nlohmann::json;

ApiError Bad(std::string field, std::string problem, int status = 400,
             std::string code = "invalid_request") {
  return ApiError{status, std::move(code), fmt::format("{}: {}", field, problem), field};
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsHttpUrl(std::string_view s) {
  const size_t scheme_end = s.find("://");
  if (scheme_end == std::string_view::npos) {
    return false;
  }
  const std::string_view scheme = s.substr(0, scheme_end);
  const std::string_view rest = s.substr(scheme_end + 3);
  return (scheme == "http" || scheme == "https") && !rest.empty() && rest.front() != '/' &&
         rest.find_first_of(" \t\r\n") == std::string_view::npos;
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

// The field `name` of `body`; an object's text (its dump) only when `keep_object`.
RequestField FieldOf(const json& body, const char* name, bool keep_object = false) {
  RequestField f;
  auto it = body.find(name);
  if (it == body.end()) {
    return f;
  }
  if (it->is_null()) {
    f.kind = Kind::kNull;
  } else if (it->is_string()) {
    f.kind = Kind::kString;
    f.text = it->get<std::string>();
  } else if (it->is_number_integer()) {
    f.kind = Kind::kInteger;
    f.integer = it->get<int64_t>();
  } else if (it->is_object()) {
    f.kind = Kind::kObject;
    if (keep_object) {
      f.text = it->dump();
    }
  } else {
    f.kind = Kind::kOther;
  }
  return f;
}

// The value `reader` is at as a field: strings decoded, integers read, an object's text kept
// (compacted) only when `keep_object`.
bool ReadField(adapters::JsonReader& reader, RequestField& f, bool keep_object) {
  f.text.clear();
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
      if (!reader.SkipValue(&span, &spaced)) {
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
      f.kind = ec == std::errc() && end == span.data() + span.size() ? Kind::kInteger
                                                                       : Kind::kOther;
      return true;
    }
  }
}

}  // namespace

std::string CheckDestinationShape(std::string_view platform, std::string_view d) {
  if (platform == "slack") {
    const bool channel =
        !d.empty() && d.size() <= 64 && std::all_of(d.begin(), d.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) != 0;
        });
    return channel || (IsHttpUrl(d) && d.starts_with("https://"))
               ? ""
               : "must be a Slack channel id (e.g. C0123456789) or an https incoming-webhook URL";
  }
  if (platform == "discord") {
    if (d.starts_with("channels/") && AllDigits(d.substr(9))) {
      return "";
    }
    if (d.starts_with("webhooks/")) {
      std::string_view rest = d.substr(9);
      const size_t slash = rest.find('/');
      if (slash != std::string_view::npos && AllDigits(rest.substr(0, slash)) &&
          slash + 1 < rest.size() && rest.substr(slash + 1).find('/') == std::string_view::npos) {
        return "";
      }
    }
    return "must be channels/<id> or webhooks/<id>/<token>";
  }
  if (platform == "line") {
    const bool ok = d.size() == 33 && (d[0] == 'U' || d[0] == 'C' || d[0] == 'R') &&
                    std::all_of(d.begin() + 1, d.end(), [](char c) {
                      return std::isxdigit(static_cast<unsigned char>(c)) != 0;
                    });
    return ok ? "" : "must be a LINE user, group or room id (U, C or R and 32 hex digits)";
  }
  if (platform == "webhook") {
    return IsHttpUrl(d) ? "" : "must be an absolute http(s) URL";
  }
  return "unknown platform";
}

DeliveryFields FieldsOf(const json& body) {
  DeliveryFields f;
  if (!body.is_object()) {
    f.is_object = false;
    return f;
  }
  f.tenant = FieldOf(body, "tenant");
  f.platform = FieldOf(body, "platform");
  f.destination = FieldOf(body, "destination");
  f.credential = FieldOf(body, "credential");
  f.payload = FieldOf(body, "payload", /*keep_object=*/true);
  f.idempotency_key = FieldOf(body, "idempotency_key");
  f.ordering_key = FieldOf(body, "ordering_key");
  f.cost = FieldOf(body, "cost");
  return f;
}

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
                                                     : nullptr;
    if (!(field != nullptr ? ReadField(reader, *field, field == &out.payload)
                           : reader.SkipValue())) {
      return false;
    }
  }
  return !reader.failed();
}

tl::expected<storage::NewDelivery, ApiError> CheckDeliveryFields(DeliveryFields&& f,
                                                                 const IntakeLimits& limits) {
  if (!f.is_object) {
    return tl::unexpected(ApiError{400, "invalid_request", "body: must be a JSON object"});
  }
  storage::NewDelivery d;
  ApiError err;
  if (!RequiredString(f.tenant, "tenant", d.tenant, err) ||
      !RequiredString(f.platform, "platform", d.platform, err)) {
    return tl::unexpected(err);
  }
  if (!pacing::ParsePlatform(d.platform)) {
    return tl::unexpected(
        Bad("platform",
            fmt::format("unknown platform '{}' (slack, discord, line, webhook)", d.platform), 422,
            "unknown_platform"));
  }
  if (!RequiredString(f.destination, "destination", d.destination, err) ||
      !RequiredString(f.credential, "credential", d.credential, err) ||
      !OptionalString(f.idempotency_key, "idempotency_key", d.idempotency_key, err) ||
      !OptionalString(f.ordering_key, "ordering_key", d.ordering_key, err)) {
    return tl::unexpected(err);
  }
  if (std::string problem = CheckDestinationShape(d.platform, d.destination); !problem.empty()) {
    return tl::unexpected(Bad("destination", problem, 422, "invalid_destination"));
  }
  if (f.payload.kind != Kind::kObject) {
    return tl::unexpected(Bad("payload", "required, a JSON object (the platform's native body)"));
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
  return d;
}

tl::expected<storage::NewDelivery, ApiError> ParseDeliveryRequest(const json& body,
                                                                  const IntakeLimits& limits) {
  return CheckDeliveryFields(FieldsOf(body), limits);
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
