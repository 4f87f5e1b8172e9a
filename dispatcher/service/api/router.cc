#include <boost/beast/http/verb.hpp>
#include <openssl/crypto.h>

#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

using boost::beast::http::verb;

// Constant time in the length of `expected`.
bool TokenMatches(std::string_view given, const std::string& expected) {
  if (expected.empty() || given.size() != expected.size()) {
    return false;
  }
  return CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0;
}

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

void RouteDeliveries(Service& s, HttpRequest&& req, const std::vector<std::string>& p,
                     Respond respond) {
  const verb m = req.method();
  if (p.size() == 2) {
    if (m == verb::post) {
      return CreateDelivery(s, req, std::move(respond));
    }
    if (m == verb::get) {
      return ListDeliveries(s, QueryParams(View(req.target())), std::move(respond));
    }
    return respond(NotAllowed());
  }
  if (p.size() == 3 && p[2] == "batch") {
    return m == verb::post ? CreateBatch(s, req, std::move(respond)) : respond(NotAllowed());
  }
  if (p.size() == 3 && p[2] == "replay") {
    return m == verb::post ? ReplayMatching(s, req, std::move(respond)) : respond(NotAllowed());
  }
  if (p.size() == 3) {
    if (m == verb::get) {
      return GetDelivery(s, p[2], std::move(respond));
    }
    if (m == verb::delete_) {
      return CancelDelivery(s, p[2], std::move(respond));
    }
    return respond(NotAllowed());
  }
  if (p.size() == 4 && p[3] == "replay") {
    return m == verb::post ? ReplayDelivery(s, p[2], std::move(respond)) : respond(NotAllowed());
  }
  respond(NotFound());
}

void RouteAdmin(Service& s, HttpRequest&& req, const std::vector<std::string>& p, Respond respond) {
  if (!TokenMatches(View(req["X-Admin-Token"]), s.options().admin_token)) {
    return respond(ErrorResponse({401, "unauthorized", "X-Admin-Token: missing or wrong"}));
  }
  // api admin tenants {tenant} rate_limits | credentials {name}
  if (p.size() == 5 && p[2] == "tenants" && p[4] == "rate_limits") {
    if (req.method() == verb::put) {
      return PutRateLimits(s, p[3], req, std::move(respond));
    }
    if (req.method() == verb::get) {
      return GetRateLimits(s, p[3], std::move(respond));
    }
    return respond(NotAllowed());
  }
  if (p.size() == 6 && p[2] == "tenants" && p[4] == "credentials") {
    return req.method() == verb::put ? PutCredential(s, p[3], p[5], req, std::move(respond))
                                     : respond(NotAllowed());
  }
  respond(NotFound());
}

}  // namespace

void Route(Service& s, HttpRequest&& req, Respond respond) {
  const std::vector<std::string> p = PathSegments(View(req.target()));
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
    return GetMetrics(s, std::move(respond));
  }
  if (p.size() >= 2 && p[0] == "v1" && p[1] == "deliveries") {
    if (!s.accepting() && req.method() == verb::post) {
      HttpResponse res = ErrorResponse({503, "draining", "shutting down; retry elsewhere"});
      res.set("Retry-After", "1");
      return respond(std::move(res));
    }
    return RouteDeliveries(s, std::move(req), p, std::move(respond));
  }
  if (p.size() == 3 && p[0] == "v1" && p[1] == "jobs") {
    return req.method() == verb::get ? GetJob(s, p[2], std::move(respond)) : respond(NotAllowed());
  }
  if (p.size() == 2 && p[0] == "v1" && p[1] == "stats") {
    return GetStats(s, std::move(respond));
  }
  if (p.size() == 2 && p[0] == "v1" && p[1] == "destinations") {
    return GetDestinations(s, QueryParams(View(req.target())), std::move(respond));
  }
  if (p.size() == 3 && p[0] == "v1" && p[1] == "destinations" && p[2] == "enable") {
    return req.method() == verb::post ? EnableDestination(s, req, std::move(respond))
                                      : respond(NotAllowed());
  }
  if (p.size() >= 2 && p[0] == "api" && p[1] == "admin") {
    return RouteAdmin(s, std::move(req), p, std::move(respond));
  }
  respond(NotFound());
}

}  // namespace egress::service
