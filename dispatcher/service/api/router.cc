#include <boost/beast/http/verb.hpp>

#include "dispatcher/service/api/auth.h"
#include "dispatcher/service/api/console.h"
#include "dispatcher/service/api/gzip.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/api/intake.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

using boost::beast::http::verb;

std::string_view View(boost::beast::string_view v) { return {v.data(), v.size()}; }

// The readiness answer while the store refuses writes: the fault's fixed tokens, never RocksDB's
// text (it names files under the data directory; the operator's log has it).
HttpResponse StoreUnhealthy(const storage::StoreHealth& h) {
  return JsonResponse(503, {{"error", "store_unhealthy"},
                            {"message", "the store refuses writes after a failed " + h.during +
                                            " (" + h.reason + "); retrying"},
                            {"reason", h.reason},
                            {"during", h.during}});
}

HttpResponse NotFound() { return ErrorResponse({404, "not_found", "no such endpoint"}); }
HttpResponse NotAllowed() {
  return ErrorResponse({405, "method_not_allowed", "method not allowed on this endpoint"});
}

// What the route of `p` asks of its caller; an unknown path is kTenant (so that an
// unauthenticated caller cannot tell which paths exist).
Access AccessOf(const std::vector<std::string>& p) {
  if (p.size() == 1 && (p[0] == "healthz" || p[0] == "readyz")) {
    return Access::kOpen;
  }
  // The console's static files hold no data: it calls the API with the key its user pastes.
  if (!p.empty() && p[0] == "ui") {
    return Access::kOpen;
  }
  if (p.size() == 1 && p[0] == "metrics") {
    return Access::kMetrics;
  }
  if (p.size() >= 2 && p[0] == "api" && p[1] == "admin") {
    return Access::kAdmin;
  }
  return Access::kTenant;
}

void RouteDeliveries(Service& s, HttpRequest&& req, const std::vector<std::string>& p,
                     const TenantScope& scope, Respond respond) {
  const verb m = req.method();
  if (p.size() == 2) {
    if (m == verb::post) {
      return CreateDelivery(s, req, scope, std::move(respond));
    }
    if (m == verb::get) {
      return ListDeliveries(s, QueryParams(View(req.target())), scope, std::move(respond));
    }
    return respond(NotAllowed());
  }
  if (p.size() == 3 && p[2] == "batch") {
    return m == verb::post ? CreateBatch(s, req, scope, std::move(respond)) : respond(NotAllowed());
  }
  if (p.size() == 3 && p[2] == "replay") {
    return m == verb::post ? ReplayMatching(s, req, scope, std::move(respond))
                           : respond(NotAllowed());
  }
  if (p.size() == 3) {
    if (m == verb::get) {
      return GetDelivery(s, p[2], scope, std::move(respond));
    }
    if (m == verb::delete_) {
      return CancelDelivery(s, p[2], scope, std::move(respond));
    }
    return respond(NotAllowed());
  }
  if (p.size() == 4 && p[3] == "replay") {
    return m == verb::post ? ReplayDelivery(s, p[2], scope, std::move(respond))
                           : respond(NotAllowed());
  }
  respond(NotFound());
}

// Authenticate has checked the admin token.
void RouteAdmin(Service& s, HttpRequest&& req, const std::vector<std::string>& p, Respond respond) {
  // api admin tenants {tenant} rate_limits | quotas | api_keys | credentials {name}; api admin
  // quotas
  if (p.size() == 5 && p[2] == "tenants" && p[4] == "rate_limits") {
    if (req.method() == verb::put) {
      return PutRateLimits(s, p[3], req, std::move(respond));
    }
    if (req.method() == verb::get) {
      return GetRateLimits(s, p[3], std::move(respond));
    }
    return respond(NotAllowed());
  }
  if (p.size() == 5 && p[2] == "tenants" && p[4] == "quotas") {
    if (req.method() == verb::put) {
      return PutQuotas(s, p[3], req, std::move(respond));
    }
    if (req.method() == verb::get) {
      return GetQuotas(s, p[3], std::move(respond));
    }
    return respond(NotAllowed());
  }
  if (p.size() == 3 && p[2] == "quotas") {
    return req.method() == verb::get ? ListQuotas(s, std::move(respond)) : respond(NotAllowed());
  }
  if (p.size() == 5 && p[2] == "tenants" && p[4] == "api_keys") {
    return req.method() == verb::put ? PutApiKeys(s, p[3], req, std::move(respond))
                                     : respond(NotAllowed());
  }
  if (p.size() == 3 && p[2] == "pauses") {
    if (req.method() == verb::post) {
      return CreatePause(s, req, std::move(respond));
    }
    if (req.method() == verb::get) {
      return ListPauses(s, std::move(respond));
    }
    return respond(NotAllowed());
  }
  if (p.size() == 4 && p[2] == "pauses") {
    return req.method() == verb::delete_ ? DeletePause(s, p[3], std::move(respond))
                                         : respond(NotAllowed());
  }
  if (p.size() == 6 && p[2] == "tenants" && p[4] == "credentials") {
    return req.method() == verb::put ? PutCredential(s, p[3], p[5], req, std::move(respond))
                                     : respond(NotAllowed());
  }
  respond(NotFound());
}

// Every route Route serves; keep in step with the dispatch below (RouteTableTest sends each one
// to a running service, and docs/openapi.yaml must list exactly these).
constexpr RouteInfo kRoutes[] = {
    {"GET", "/healthz"},
    {"GET", "/readyz"},
    {"GET", "/metrics"},
    {"POST", "/v1/deliveries"},
    {"GET", "/v1/deliveries"},
    {"POST", "/v1/deliveries/batch"},
    {"POST", "/v1/deliveries/replay"},
    {"GET", "/v1/deliveries/{id}"},
    {"DELETE", "/v1/deliveries/{id}"},
    {"POST", "/v1/deliveries/{id}/replay"},
    {"GET", "/v1/jobs/{id}"},
    {"GET", "/v1/stats"},
    {"GET", "/v1/destinations"},
    {"POST", "/v1/destinations/enable"},
    {"GET", "/api/admin/tenants/{tenant}/rate_limits"},
    {"PUT", "/api/admin/tenants/{tenant}/rate_limits"},
    {"GET", "/api/admin/tenants/{tenant}/quotas"},
    {"PUT", "/api/admin/tenants/{tenant}/quotas"},
    {"GET", "/api/admin/quotas"},
    {"GET", "/v1/quotas"},
    {"PUT", "/api/admin/tenants/{tenant}/api_keys"},
    {"PUT", "/api/admin/tenants/{tenant}/credentials/{name}"},
    {"POST", "/api/admin/pauses"},
    {"GET", "/api/admin/pauses"},
    {"DELETE", "/api/admin/pauses/{id}"},
};

}  // namespace

std::span<const RouteInfo> RouteTable() { return kRoutes; }

std::variant<Admission, HttpResponse> Admit(Service& s, const HttpRequestHeader& header,
                                            const boost::asio::ip::address& peer) {
  const boost::asio::ip::address client = s.options().http.trusted_proxies.ClientOf(peer, header);
  auto who = Authenticate(s, header, client, AccessOf(PathSegments(View(header.target()))));
  if (auto* refused = std::get_if<HttpResponse>(&who)) {
    return std::move(*refused);
  }
  Admission admission{.principal = std::move(std::get<Principal>(who)), .client = client};
  admission.body_limit =
      RequestBodyLimit(s.options().intake, header.method(), View(header.target()));
  if (admission.principal.kind == Principal::Kind::kTenant) {
    admission.body_owner = "tenant:" + admission.principal.tenant;
  }
  return admission;
}

void Route(Service& s, HttpRequest&& req, const boost::asio::ip::address& peer, Respond respond) {
  auto admitted = Admit(s, req, peer);
  if (auto* refused = std::get_if<HttpResponse>(&admitted)) {
    return respond(std::move(*refused));
  }
  const Admission& admission = std::get<Admission>(admitted);
  if (req.body().size() > admission.body_limit) {
    return respond(
        ErrorResponse({413, "payload_too_large", "request body is over the server's limit"}));
  }
  Route(s, std::move(req), admission, std::move(respond));
}

void Route(Service& s, HttpRequest&& req, const Admission& admission, Respond respond) {
  const std::vector<std::string> p = PathSegments(View(req.target()));
  const TenantScope scope = admission.principal.scope();
  // The probes and the scrape are reads: GET only, as docs/openapi.yaml lists them.
  if (p.size() == 1 && (p[0] == "healthz" || p[0] == "readyz" || p[0] == "metrics") &&
      req.method() != verb::get) {
    return respond(NotAllowed());
  }
  if (p.size() == 1 && p[0] == "healthz") {
    return respond(JsonResponse(200, {{"status", "ok"}}));
  }
  if (p.size() == 1 && p[0] == "readyz") {
    if (!s.accepting()) {
      return respond(ErrorResponse({503, "draining", "shutting down"}));
    }
    if (!s.store_health().healthy()) {
      return respond(StoreUnhealthy(s.store_health().health()));
    }
    return respond(JsonResponse(200, {{"status", "ready"}}));
  }
  if (p.size() == 1 && p[0] == "metrics") {
    return GetMetrics(s, AcceptsGzip(req), std::move(respond));
  }
  if (!p.empty() && p[0] == "ui") {
    return respond(ConsoleResponse(req.method(), View(req.target())));
  }
  if (p.size() >= 2 && p[0] == "v1" && p[1] == "deliveries") {
    if (!s.accepting() && req.method() == verb::post) {
      HttpResponse res = ErrorResponse({503, "draining", "shutting down; retry elsewhere"});
      res.set("Retry-After", "1");
      return respond(std::move(res));
    }
    return RouteDeliveries(s, std::move(req), p, scope, std::move(respond));
  }
  if (p.size() == 3 && p[0] == "v1" && p[1] == "jobs") {
    return req.method() == verb::get ? GetJob(s, p[2], scope, std::move(respond))
                                     : respond(NotAllowed());
  }
  if (p.size() == 2 && p[0] == "v1" && p[1] == "quotas") {
    if (req.method() != verb::get) {
      return respond(NotAllowed());
    }
    // A tenant key reads its own; the admin names the tenant.
    std::string tenant = scope.value_or("");
    if (!scope) {
      auto query = QueryParams(View(req.target()));
      tenant = query["tenant"];
      if (tenant.empty()) {
        return respond(ErrorResponse(
            {400, "invalid_request", "tenant: required with the admin token", "tenant"}));
      }
    }
    return GetQuotas(s, tenant, std::move(respond));
  }
  if (p.size() == 2 && p[0] == "v1" && p[1] == "stats") {
    if (req.method() != verb::get) {
      return respond(NotAllowed());
    }
    // A tenant key reads its own; the admin may name one (?tenant=) for that tenant's view.
    TenantScope stats_scope = scope;
    if (!scope) {
      auto query = QueryParams(View(req.target()));
      if (auto it = query.find("tenant"); it != query.end()) {
        if (it->second.empty()) {
          return respond(
              ErrorResponse({400, "invalid_request", "tenant: empty when given", "tenant"}));
        }
        if (auto bad = CheckRequestText("tenant", it->second, s.options().store.max_field_bytes)) {
          return respond(ErrorResponse(*bad));
        }
        stats_scope = it->second;
      }
    }
    return GetStats(s, stats_scope, std::move(respond));
  }
  if (p.size() == 2 && p[0] == "v1" && p[1] == "destinations") {
    return req.method() == verb::get
               ? GetDestinations(s, QueryParams(View(req.target())), scope, std::move(respond))
               : respond(NotAllowed());
  }
  if (p.size() == 3 && p[0] == "v1" && p[1] == "destinations" && p[2] == "enable") {
    return req.method() == verb::post ? EnableDestination(s, req, scope, std::move(respond))
                                      : respond(NotAllowed());
  }
  if (p.size() >= 2 && p[0] == "api" && p[1] == "admin") {
    return RouteAdmin(s, std::move(req), p, std::move(respond));
  }
  respond(NotFound());
}

}  // namespace egress::service
