#pragma once

// Who a request acts as (docs/api.md, "Authentication"). Route (handlers.h) authenticates every
// request but /healthz and /readyz before it reaches a handler, and hands the handler the
// tenant it is confined to.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "dispatcher/pacing/budget.h"
#include "dispatcher/service/api/error.h"
#include "dispatcher/service/api/http_server.h"
#include "dispatcher/service/api/principal.h"

namespace egress::service {

class Service;

struct AuthOptions {
  // server.auth = "required": every route but /healthz and /readyz needs a tenant's API key or
  // the admin token. false ("off"): a request without either acts on all tenants, as the API of
  // old (the admin routes still need the admin token). Default: true.
  bool required = true;
  // /metrics needs the admin token (when `required`). Default: true.
  bool metrics_auth = true;
  // Failed authentications one source may make (server.auth_failure_budget per minute, all at
  // once at most); past it the source is answered 429. Default: 20 per minute.
  pacing::Budget failure_budget{20, 60'000, 20};
  // Sources whose failures are remembered at once (AuthFailureLimiter). Default: 10,000.
  size_t max_failure_sources = 10'000;
  // (tenant, SHA-256 digest of one of its keys) from the config (adapters/api_key.h).
  std::vector<std::pair<std::string, std::string>> api_keys;
};

// What a route asks of its caller.
enum class Access {
  kOpen,     // /healthz, /readyz: anyone, nothing is checked
  kTenant,   // /v1/...: a tenant key (confined to its tenant) or the admin token
  kMetrics,  // /metrics: the admin token, or anyone when server.metrics_auth is false
  kAdmin,    // /api/admin/...: the admin token only
};

// Authenticates a request from its header alone (its body is not read yet), for a route of
// `access`, from `client` (the peer, or the client a trusted proxy named): the principal, or the
// answer to send instead: 429 too_many_auth_failures with Retry-After while the client is over its
// failure budget (checked before any key), 401 unauthorized with WWW-Authenticate: Bearer for a
// missing or unknown key or token, 403 forbidden for a tenant key on an admin-only route. The admin
// token comes in X-Admin-Token or as Authorization: Bearer; a tenant key as Bearer. Every
// comparison is constant in time (SHA-256 first, then CRYPTO_memcmp). Counts failures in
// relay_egress_auth_failures_total{reason} (missing, unknown, over_budget) and, for a wrong key
// or token, in the client's failure budget. Never logs or echoes what was presented. Loop thread.
std::variant<Principal, HttpResponse> Authenticate(Service& service,
                                                   const HttpRequestHeader& request,
                                                   const boost::asio::ip::address& client,
                                                   Access access);

// 403 {"error":"forbidden"}: a tenant key asked for another tenant's work or an admin route.
HttpResponse Forbidden(std::string message);

// Confines a tenant filter (a query's or a body's "tenant") to `scope`: empty becomes the
// scope's tenant, another tenant is 403 forbidden naming `field`. Nothing without a scope.
std::optional<ApiError> ConfineTenantFilter(const TenantScope& scope, std::string_view field,
                                            std::string& tenant);

// True when `tenant`'s work may be seen within `scope`.
inline bool InScope(const TenantScope& scope, const std::string& tenant) {
  return !scope || *scope == tenant;
}

}  // namespace egress::service
