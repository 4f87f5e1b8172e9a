#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "dispatcher/service/api_error.h"
#include "storage/delivery.h"

namespace egress::service {

struct IntakeLimits {
  size_t max_payload_bytes = 1 << 20;  // 413 above. Default: 1 MiB.
  size_t max_batch_items = 1000;       // Default: 1000.
  uint32_t max_cost = 1'000'000;
};

// Parses one delivery of POST /v1/deliveries:
//   {"tenant","platform","destination","credential","payload","idempotency_key"?,
//    "ordering_key"?,"cost"?}
// and checks the destination's shape for its platform. Errors name the field: 400 for a
// missing or mistyped field, 422 for an unknown platform or a destination of the wrong shape,
// 413 for a payload over the cap. The payload (platform-native JSON) is stored as its compact
// serialisation.
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

// The API view of a stored delivery (GET /v1/deliveries/{id}). The payload is included only
// when `with_payload`.
nlohmann::json DeliveryToJson(const storage::Delivery& d, bool with_payload);

}  // namespace egress::service
