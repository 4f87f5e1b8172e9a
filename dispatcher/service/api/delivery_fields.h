#pragma once

// What intake reads from a request body: the fields of one delivery, straight from the JSON text
// (no tree is built), and their checks. The one parser of intake
// (dispatcher/service/api/intake.cc); pure functions, safe on any thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "adapters/adapter_registry.h"
#include "dispatcher/service/api/error.h"
#include "storage/delivery.h"

namespace egress::adapters {
class JsonReader;
}  // namespace egress::adapters

namespace egress::service {

struct IntakeLimits {
  size_t max_payload_bytes = 1 << 20;  // 413 above. Default: 1 MiB.
  size_t max_batch_items = 1000;       // Default: 1000.
  size_t max_json_depth = 64;          // payload nesting; 400 beyond. Default: 64.
  uint32_t max_cost = 1'000'000;
  // Largest body of POST /v1/deliveries/batch; every other body may hold max_payload_bytes +
  // config::kDeliveryBodyAllowance. Default: 16 MiB.
  size_t max_batch_bytes = 16 << 20;
  // Intake requests of one tenant waiting for their write at once; 429 beyond. Default: 256.
  size_t max_requests_in_flight = 256;
};

// One field of a delivery request as read from its JSON, before any check.
struct RequestField {
  enum class Kind { kAbsent, kNull, kString, kInteger, kObject, kOther };
  Kind kind = Kind::kAbsent;
  std::string text;     // a string's value; an object's compact JSON text (payload only)
  size_t depth = 0;     // an object's nesting depth (1: holds only scalars); payload only
  int64_t integer = 0;  // an integer's value (an unsigned one above INT64_MAX wraps, as
                        // nlohmann's get<int64_t> does: negative, so out of any range)
};

// The fields of one delivery request, read either from a parsed tree (FieldsOf) or straight
// from the text (ReadDeliveryFields); CheckDeliveryFields turns either into a delivery.
struct DeliveryFields {
  bool is_object = true;  // false: the request is not a JSON object
  RequestField tenant, platform, destination, credential, payload, idempotency_key, ordering_key,
      cost, priority;
};

// Reads the value `reader` is at as a delivery request. The payload's text is as sent, less the
// whitespace between tokens (key order, escapes and number spellings are the client's). A
// repeated key: the last one counts. False when the text is not JSON there (the reader has
// failed). The reader accepts what nlohmann::json::accept accepts, less a raw NUL byte.
bool ReadDeliveryFields(adapters::JsonReader& reader, DeliveryFields& out);

// The body of POST /v1/deliveries (a UTF-8 byte order mark is skipped): 400 malformed_json when
// it is not JSON. A body that is JSON but not an object comes back with is_object false.
tl::expected<DeliveryFields, ApiError> ReadDeliveryBody(std::string_view body);

// The items of a POST /v1/deliveries/batch body, {"deliveries":[...]}: 400 malformed_json when it
// is not JSON, 400 invalid_request when "deliveries" is missing or not an array (repeated: the
// last counts), 413 batch_too_large for none or more than `max_items` items. Holds at most
// `max_items` items whatever the body's size.
tl::expected<std::vector<DeliveryFields>, ApiError> ReadBatchBody(std::string_view body,
                                                                  size_t max_items);

// Checks fields already read and turns them into a delivery; the strings move into the result.
// Errors name the field: 400 for a missing or mistyped field, 422 for an unknown platform or a
// destination of the wrong shape (the platform's adapter decides: CheckDestination), 413 for a
// payload over the cap. The payload (platform-native JSON) is stored as its compact text.
tl::expected<storage::NewDelivery, ApiError> CheckDeliveryFields(
    DeliveryFields&& fields, const IntakeLimits& limits, const adapters::AdapterRegistry& adapters);

// Splits a LINE multicast over 500 recipients ("to": [ids...] in the payload) into deliveries of
// at most 500 recipients each, in order, every other field copied; each part is its own delivery
// (its own LINE retry key). A part's idempotency key is "<key>#<n>" (n from 0) when the request
// had one. Any other delivery comes back alone and unchanged. 400 naming payload.to when the
// payload cannot be split.
tl::expected<std::vector<storage::NewDelivery>, ApiError> SplitDelivery(storage::NewDelivery d);

}  // namespace egress::service
