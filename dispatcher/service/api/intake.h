#pragma once

// Intake (docs/api.md, "Deliveries"): the two routes that accept deliveries. Each reads the body
// with one parser (delivery_fields.h), checks every item and its credential, meters the tenant
// (IntakeLimiter: 429 with the backpressure headers), refuses a tenant over its backlog
// watermark, stores the deliveries in one synced write and tells the delivery loop. Both run on
// the loop and answer through `respond` on the loop.

#include "dispatcher/service/api/auth.h"
#include "dispatcher/service/api/delivery_fields.h"
#include "dispatcher/service/api/http_server.h"

namespace egress::service {

class Service;

// POST /v1/deliveries: 202 {"id","state":"queued"} (200 when the idempotency key was stored
// before), 4xx naming the field, 429 over the intake budget or the backlog watermark, 503 when
// the store refuses.
// Within a tenant's scope (auth.h) the body's "tenant" may be left out (it is the scope's) and
// any other tenant is 403 forbidden.
void CreateDelivery(Service& service, const HttpRequest& request, const TenantScope& scope,
                    Respond respond);

// The body limit of every route (HttpServerOptions::body_limit): a batch's is
// limits.max_batch_bytes, every other request's one payload and its fields
// (max_payload_bytes + config::kDeliveryBodyAllowance).
size_t RequestBodyLimit(const IntakeLimits& limits, boost::beast::http::verb method,
                        std::string_view target);

// POST /v1/deliveries/batch: 202 when every item is accepted, else 207 with each item's result
// in order; the whole request is refused (4xx) only when the body is not a batch.
// Within a tenant's scope, an item without "tenant" is the scope's, and an item naming another
// tenant refuses the whole request (403 forbidden, nothing stored).
void CreateBatch(Service& service, const HttpRequest& request, const TenantScope& scope,
                 Respond respond);

}  // namespace egress::service
