#pragma once

#include <nlohmann/json.hpp>

#include "storage/delivery.h"

namespace egress::service {

// The API view of a stored delivery (GET /v1/deliveries/{id}). The payload is included only
// when `with_payload`.
nlohmann::json DeliveryToJson(const storage::Delivery& d, bool with_payload);

}  // namespace egress::service
