#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "dispatcher/service/api/error.h"
#include "storage/delivery.h"

namespace egress::adapters {
class JsonReader;
}  // namespace egress::adapters

namespace egress::service {

struct IntakeLimits {
  size_t max_payload_bytes = 1 << 20;  // 413 above. Default: 1 MiB.
  size_t max_batch_items = 1000;       // Default: 1000.
  uint32_t max_cost = 1'000'000;
};

// One field of a delivery request as read from its JSON, before any check.
struct RequestField {
  enum class Kind { kAbsent, kNull, kString, kInteger, kObject, kOther };
  Kind kind = Kind::kAbsent;
  std::string text;     // a string's value; an object's compact JSON text (payload only)
  int64_t integer = 0;  // an integer's value (an unsigned one above INT64_MAX wraps, as
                        // nlohmann's get<int64_t> does: negative, so out of any range)
};

// The fields of one delivery request, read either from a parsed tree (FieldsOf) or straight
// from the text (ReadDeliveryFields); CheckDeliveryFields turns either into a delivery.
struct DeliveryFields {
  bool is_object = true;  // false: the request is not a JSON object
  RequestField tenant, platform, destination, credential, payload, idempotency_key, ordering_key,
      cost;
};

// The fields of `body`; the payload's text is its compact serialisation (nlohmann's dump).
DeliveryFields FieldsOf(const nlohmann::json& body);

// Reads the value `reader` is at as a delivery request. The payload's text is as sent, less the
// whitespace between tokens (key order, escapes and number spellings are the client's). False
// when the text is not JSON there (the reader has failed).
bool ReadDeliveryFields(adapters::JsonReader& reader, DeliveryFields& out);

// The checks of ParseDeliveryRequest on fields already read; the strings move into the result.
tl::expected<storage::NewDelivery, ApiError> CheckDeliveryFields(DeliveryFields&& fields,
                                                                 const IntakeLimits& limits);

// Parses one delivery of POST /v1/deliveries:
//   {"tenant","platform","destination","credential","payload","idempotency_key"?,
//    "ordering_key"?,"cost"?}
// and checks the destination's shape for its platform. Errors name the field: 400 for a
// missing or mistyped field, 422 for an unknown platform or a destination of the wrong shape,
// 413 for a payload over the cap. The payload (platform-native JSON) is stored as its compact
// serialisation. Same as CheckDeliveryFields(FieldsOf(body), limits).
tl::expected<storage::NewDelivery, ApiError> ParseDeliveryRequest(const nlohmann::json& body,
                                                                  const IntakeLimits& limits);

// Splits a LINE multicast over 500 recipients ("to": [ids...] in the payload) into deliveries of
// at most 500 recipients each, in order, every other field copied; each part is its own delivery
// (its own LINE retry key). A part's idempotency key is "<key>#<n>" (n from 0) when the request
// had one. Any other delivery comes back alone and unchanged. 400 naming payload.to when the
// payload cannot be split.
tl::expected<std::vector<storage::NewDelivery>, ApiError> SplitDelivery(storage::NewDelivery d);

// A destination's shape check alone; empty when fine, else the problem.
std::string CheckDestinationShape(std::string_view platform, std::string_view destination);

}  // namespace egress::service
