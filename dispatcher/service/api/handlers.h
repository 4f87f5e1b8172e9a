#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "dispatcher/service/api/auth.h"
#include "dispatcher/service/api/http_server.h"
#include "dispatcher/service/api/intake.h"
#include "dispatcher/service/service.h"
#include "storage/queue_store.h"

namespace egress::service {

// Runs `work(store)` on the storage pool, then `done(result)` on the loop, unless the service
// is gone by then (Service::alive).
template <class Work, class Done>
void OnStore(Service& s, Work work, Done done) {
  boost::asio::post(s.storage_pool(),
                    [&s, work = std::move(work), done = std::move(done)]() mutable {
                      auto result = work(s.store());
                      boost::asio::post(s.io(), [alive = s.alive(), done = std::move(done),
                                                 result = std::move(result)]() mutable {
                        if (auto a = alive.lock(); a && *a) {
                          done(std::move(result));
                        }
                      });
                    });
}

// The HTTP API (docs/api.md); intake's two routes are declared in intake.h. Every handler runs on
// the loop, does its store work on the storage pool and answers through `respond` on the loop.
// `service` outlives every handler (Service joins its storage pool before it is destroyed).
// The server's gate (HttpGate) runs Admit on a request's header before any of its body is
// read: it finds the client (server.trusted_proxies), authenticates the header for the route
// (auth.h) and sets the route's body limit (RequestBodyLimit), counting a tenant key's body
// bytes against its tenant; a refusal (401, 403, 429) is the answer, and the body is never read.
std::variant<Admission, HttpResponse> Admit(Service& service, const HttpRequestHeader& header,
                                            const boost::asio::ip::address& peer);
// Serves an admitted request. The handlers of /v1 act within the principal's scope: a tenant
// key's tenant, or every tenant (nullopt). Within a scope another tenant's delivery or job is
// answered 404 as if it did not exist, and a filter or body naming another tenant 403 forbidden.
void Route(Service& service, HttpRequest&& request, const Admission& admission, Respond respond);
// Admit and Route in one, for a whole request from `peer` (the fuzzer, tests): a body over the
// route's limit is 413 payload_too_large, as the server answers it.
void Route(Service& service, HttpRequest&& request, const boost::asio::ip::address& peer,
           Respond respond);

// One route Route serves: its method and its path as an OpenAPI path template
// ("/v1/deliveries/{id}"). docs/openapi.yaml describes exactly these.
struct RouteInfo {
  std::string_view method;
  std::string_view path;
};
// Every route, in the order docs/api.md lists them; static storage.
std::span<const RouteInfo> RouteTable();

// The stored delivery `id`, NotFound (as the store says it) when it belongs to a tenant outside
// `scope`. Blocking: on the storage pool.
Result<storage::Delivery> GetInScope(storage::QueueStore& store, const std::string& id,
                                     const TenantScope& scope);

void GetDelivery(Service& service, const std::string& id, const TenantScope& scope,
                 Respond respond);
void ListDeliveries(Service& service, const std::map<std::string, std::string>& query,
                    const TenantScope& scope, Respond respond);
void ReplayDelivery(Service& service, const std::string& id, const TenantScope& scope,
                    Respond respond);
void ReplayMatching(Service& service, const HttpRequest& request, const TenantScope& scope,
                    Respond respond);
void CancelDelivery(Service& service, const std::string& id, const TenantScope& scope,
                    Respond respond);
// Registers a replay job for `filter` (state dead or deferred), answers 202 with it (429 when
// too many run) and works through the matches in slices on the storage pool, one slice at a
// time, until done, failed, or the service drains (then it stops between slices, failed).
// `echo` is the filter as the job shows it; the job belongs to `scope` (GetJob).
void StartReplayJob(Service& service, storage::ListFilter filter, nlohmann::json echo,
                    const TenantScope& scope, Respond respond);
// GET /v1/jobs/{id}: 200 with the job, 404 for an unknown or malformed id or, within a tenant's
// scope, a job another scope started.
void GetJob(Service& service, const std::string& id, const TenantScope& scope, Respond respond);

// Within a tenant's scope: {"tenant", "backlog", "destinations"} (the store counts states for
// the whole service only).
void GetStats(Service& service, const TenantScope& scope, Respond respond);
void GetDestinations(Service& service, const std::map<std::string, std::string>& query,
                     const TenantScope& scope, Respond respond);
// A tenant key may enable its own tenant's destinations; another tenant's key is 404.
void EnableDestination(Service& service, const HttpRequest& request, const TenantScope& scope,
                       Respond respond);
// The exposition text; as gzip when `accepts_gzip` (the request's Accept-Encoding, AcceptsGzip).
void GetMetrics(Service& service, bool accepts_gzip, Respond respond);

// Durable first, then in force: stores `text` under the setting `key` (an empty `text` deletes
// it), then runs `apply` on the loop, which answers through `respond`. A failed write answers
// with its error, runs `undo` (when given) and applies nothing, so a restart keeps what the
// operator was told. Writes go one after another in the order of the calls
// (Service::settings_writes). From the call to `apply` or `undo` it is a local change
// (SettingsReloader): no reload of the shared store's settings read before the write puts the
// old value back.
void StoreSettingThenApply(Service& service, std::string key, std::string text, Respond respond,
                           std::function<void(Respond)> apply, std::function<void()> undo = {});

// POST /api/admin/pauses: 201 with the new pause, stored before it is in force (docs/api.md,
// "Pauses"); 200 with the pause in force that has the same scope, if any; 400 for a body
// PauseFromRequest refuses; 409 pause_limit past PauseBook::kMaxPauses.
void CreatePause(Service& service, const HttpRequest& request, Respond respond);
// GET /api/admin/pauses: 200 {"pauses":[...]} in creation order.
void ListPauses(Service& service, Respond respond);
// DELETE /api/admin/pauses/{id}: 200 with the pause and "resumed": true once its deletion is
// stored and its destinations let go; 404 for an id no pause in force has.
void DeletePause(Service& service, const std::string& id, Respond respond);

void PutRateLimits(Service& service, const std::string& tenant, const HttpRequest& request,
                   Respond respond);
void GetRateLimits(Service& service, const std::string& tenant, Respond respond);
// PUT /api/admin/tenants/{tenant}/quotas {"quotas":{...}}: replaces the tenant's own quotas
// (tenant_settings.h), persisted before they take effect; {} goes back to the tier's. Answers as
// GetQuotas.
void PutQuotas(Service& service, const std::string& tenant, const HttpRequest& request,
               Respond respond);
// GET /api/admin/tenants/{tenant}/quotas and, for a tenant key, GET /v1/quotas: 200
// {"tenant","tier","quotas":{name:{limit,window,window_ms,platforms,source,used,remaining,
// resets_in_ms,resets}}}.
void GetQuotas(Service& service, const std::string& tenant, Respond respond);
// GET /api/admin/quotas: {"tenants":[GetQuotas' answer for each tenant with a tier or quotas]}.
void ListQuotas(Service& service, Respond respond);
// PUT /api/admin/tenants/{tenant}/api_keys {"api_keys":[...]}: replaces the tenant's keys (each
// the key or "sha256:<hex>"), persisted as digests (tenant_settings.h) before they take effect.
void PutApiKeys(Service& service, const std::string& tenant, const HttpRequest& request,
                Respond respond);
void PutCredential(Service& service, const std::string& tenant, const std::string& name,
                   const HttpRequest& request, Respond respond);

}  // namespace egress::service
