#pragma once

#include <nlohmann/json.hpp>

#include "storage/delivery.h"

namespace egress::storage {

// The JSON view of a stored delivery, as the API answers GET /v1/deliveries/{id} and lists, and
// as the CLI prints it from either the service or the store (docs/api.md):
//   {"id","tenant","platform","destination","credential","state","attempts","cost","priority",
//    "created_ms",
//    "updated_ms", "idempotency_key"?, "ordering_key"?, "next_attempt_ms"? (waiting ones),
//    "reason"?, "finished_ms"?, "attempts_history": [{"at_ms","duration_ms","http_status",
//    "platform_error","detail","rate_limit_headers": {name: value}}], "payload"?}
// The payload is included only when `with_payload`: as JSON when it parses as JSON nested at
// most kMaxPayloadViewDepth deep, else as a string of its bytes.
//
// The destination, the reason and each attempt's detail pass the redaction layer
// (dispatcher/base/redact.h): a Discord webhook token or a URL's query is shown as "…".
// Stored records are not trusted: the view never throws, and every string in it is valid UTF-8
// (an ill-formed sequence reads as U+FFFD), so any dump() of it succeeds. Thread-compatible.
nlohmann::json DeliveryToJson(const Delivery& d, bool with_payload);

// Deepest payload shown as JSON; a deeper one is shown as its text, so that serialising the view
// (recursive in nlohmann) stays within a thread's stack.
inline constexpr int kMaxPayloadViewDepth = 512;

}  // namespace egress::storage
