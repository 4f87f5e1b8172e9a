// Replay and cancel: POST /v1/deliveries/{id}/replay, POST /v1/deliveries/replay,
// DELETE /v1/deliveries/{id}. The actions themselves are storage/operator_actions.h, shared with
// the CLI's offline path; this file reads the request, runs them on the storage pool and tells
// the delivery loop of what became queued. A replay by filter that is not a dry run is a job
// (jobs.cc).

#include <string>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <tl/expected.hpp>

#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/service.h"
#include "storage/operator_actions.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using storage::Delivery;
using storage::DeliveryState;

// The string field `name` of `body`, `fallback` when absent; 400 naming it when not a string.
tl::expected<std::string, ApiError> StringField(const json& body, const char* name,
                                                std::string fallback = "") {
  auto it = body.find(name);
  if (it == body.end()) {
    return fallback;
  }
  if (!it->is_string()) {
    return tl::unexpected(
        ApiError{400, "invalid_request", std::string(name) + ": must be a string", name});
  }
  return it->get<std::string>();
}

// The body of POST /v1/deliveries/replay as a store filter and its dry_run flag; a filter no
// stored field could match (a control character, over `max_bytes`, an unknown platform) is a 400.
tl::expected<std::pair<storage::ListFilter, bool>, ApiError> ReplayRequest(const json& body,
                                                                           size_t max_bytes) {
  if (!body.is_object()) {
    return tl::unexpected(ApiError{400, "invalid_request", "body: must be a JSON object"});
  }
  auto state = StringField(body, "state", "dead");
  if (!state) {
    return tl::unexpected(state.error());
  }
  storage::ListFilter f;
  f.state = storage::ParseState(*state);
  if (f.state != DeliveryState::kDead && f.state != DeliveryState::kDeferred) {
    return tl::unexpected(
        ApiError{400, "invalid_request", "state: must be dead or deferred", "state"});
  }
  for (auto [name, field] :
       {std::pair{"tenant", &f.tenant}, std::pair{"platform", &f.platform},
        std::pair{"destination", &f.destination}, std::pair{"reason", &f.reason_prefix}}) {
    auto value = StringField(body, name);
    if (!value) {
      return tl::unexpected(value.error());
    }
    if (auto bad = CheckRequestText(name, *value, max_bytes)) {
      return tl::unexpected(*bad);
    }
    *field = std::move(*value);
  }
  if (auto bad = CheckPlatformFilter("platform", f.platform)) {
    return tl::unexpected(*bad);
  }
  bool dry_run = false;
  if (auto it = body.find("dry_run"); it != body.end()) {
    if (!it->is_boolean()) {
      return tl::unexpected(
          ApiError{400, "invalid_request", "dry_run: must be true or false", "dry_run"});
    }
    dry_run = it->get<bool>();
  }
  return std::pair{std::move(f), dry_run};
}

}  // namespace

void ReplayDelivery(Service& s, const std::string& id, const TenantScope& scope, Respond respond) {
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  asio::post(s.storage_pool(), [&s, id, scope, now_ms, respond = std::move(respond)]() mutable {
    // A delivery's tenant never changes: the look first is as good as one inside the action.
    auto seen = GetInScope(s.store(), id, scope);
    auto d = seen ? storage::ReplayOne(s.store(), id, now_ms) : Result<Delivery>(seen.error());
    asio::post(s.io(), [&s, d = std::move(d), respond = std::move(respond)] {
      if (!d) {
        respond(ErrorResponse(FromStatus(d.error())));
        return;
      }
      s.loop().Notify(*d);
      respond(JsonResponse(200, {{"id", d->id}, {"state", "queued"}}));
    });
  });
}

void ReplayMatching(Service& s, const HttpRequest& request, const TenantScope& scope,
                    Respond respond) {
  auto body = ParseJsonBody(request);
  if (!body) {
    respond(ErrorResponse(body.error()));
    return;
  }
  auto parsed = ReplayRequest(*body, s.options().store.max_field_bytes);
  if (!parsed) {
    respond(ErrorResponse(parsed.error()));
    return;
  }
  auto [f, dry_run] = std::move(*parsed);
  if (auto forbidden = ConfineTenantFilter(scope, "tenant", f.tenant)) {
    respond(ErrorResponse(*forbidden));
    return;
  }
  if (!dry_run) {
    json echo = {{"state", std::string(storage::StateName(*f.state))}};
    for (auto [name, field] :
         {std::pair{"tenant", &f.tenant}, std::pair{"platform", &f.platform},
          std::pair{"destination", &f.destination}, std::pair{"reason", &f.reason_prefix}}) {
      if (!field->empty()) {
        echo[name] = *field;
      }
    }
    return StartReplayJob(s, std::move(f), std::move(echo), scope, std::move(respond));
  }
  // A dry run only counts (at most kMaxReplayPerCall): it answers at once.
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  OnStore(
      s,
      [f = std::move(f), now_ms](storage::QueueStore& store) {
        return storage::ReplayMatching(store, f, true, now_ms);
      },
      [respond = std::move(respond)](Result<storage::ReplayCount> count) {
        if (!count) {
          respond(ErrorResponse(FromStatus(count.error())));
          return;
        }
        respond(
            JsonResponse(200, {{"matched", count->matched}, {"replayed", 0}, {"dry_run", true}}));
      });
}

void CancelDelivery(Service& s, const std::string& id, const TenantScope& scope, Respond respond) {
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  asio::post(s.storage_pool(), [&s, id, scope, now_ms, respond = std::move(respond)]() mutable {
    auto seen = GetInScope(s.store(), id, scope);
    auto d = seen ? storage::Cancel(s.store(), id, now_ms) : Result<Delivery>(seen.error());
    asio::post(s.io(), [d = std::move(d), respond = std::move(respond)] {
      respond(d ? JsonResponse(200, {{"id", d->id}, {"state", "cancelled"}})
                : ErrorResponse(FromStatus(d.error())));
    });
  });
}

}  // namespace egress::service
