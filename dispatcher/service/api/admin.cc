// /api/admin/tenants/{tenant}/rate_limits and /credentials/{name}. The caller checks the
// admin token (Route) before any of these runs.

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "adapters/credential_token.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/event_log.h"
#include "dispatcher/service/service.h"
#include "dispatcher/service/tenant_settings.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using pacing::BudgetName;

}  // namespace

void PutRateLimits(Service& s, const std::string& tenant, const HttpRequest& request,
                   Respond respond) {
  if (auto bad = CheckRequestText("tenant", tenant, s.options().store.max_field_bytes)) {
    respond(ErrorResponse(*bad));
    return;
  }
  auto body = ParseJsonBody(request);
  if (!body) {
    respond(ErrorResponse(body.error()));
    return;
  }
  if (!body->is_object()) {
    respond(ErrorResponse({400, "invalid_request", "body: must be a JSON object"}));
    return;
  }
  auto overrides = ParseRateLimits(body->value("rate_limits", json::object()));
  if (!overrides) {
    respond(ErrorResponse(overrides.error()));
    return;
  }
  // Durable first, then in force: a restart keeps what the operator was told.
  const std::string text = overrides->empty() ? "" : RateLimitsToJson(*overrides).dump();
  asio::post(s.storage_pool(), [&s, tenant, text, overrides = std::move(*overrides),
                                respond = std::move(respond)]() mutable {
    Status stored = s.store().PutSetting(OverridesKey(tenant), text);
    asio::post(s.io(), [&s, tenant, stored, overrides = std::move(overrides),
                        respond = std::move(respond)]() mutable {
      if (!stored.ok()) {
        respond(ErrorResponse(FromStatus(stored)));
        return;
      }
      if (Status st = s.SetTenantOverrides(tenant, overrides); !st.ok()) {
        respond(ErrorResponse(FromStatus(st)));
        return;
      }
      LogEvent(LogLevel::kInfo, "rate_limits_replaced",
               {{"tenant", tenant}, {"rate_limits", RateLimitsToJson(overrides)}});
      GetRateLimits(s, tenant, std::move(respond));
    });
  });
}

void GetRateLimits(Service& s, const std::string& tenant, Respond respond) {
  json budgets = json::object();
  for (int i = 0; i < pacing::kBudgetNameCount; ++i) {
    const auto name = static_cast<BudgetName>(i);
    const auto [budget, overridden] = s.EffectiveBudget(tenant, name);
    budgets[std::string(pacing::BudgetNameString(name))] = {{"limit", budget.limit},
                                                            {"scale_ms", budget.scale_ms},
                                                            {"burst", budget.burst},
                                                            {"overridden", overridden}};
  }
  respond(JsonResponse(200, {{"tenant", tenant}, {"rate_limits", budgets}}));
}

void PutCredential(Service& s, const std::string& tenant, const std::string& name,
                   const HttpRequest& request, Respond respond) {
  // Names intake could never use: tenants and credential names are stored fields of deliveries.
  for (auto [field, value] : {std::pair{"tenant", &tenant}, std::pair{"name", &name}}) {
    if (auto bad = CheckRequestText(field, *value, s.options().store.max_field_bytes)) {
      respond(ErrorResponse(*bad));
      return;
    }
  }
  auto body = ParseJsonBody(request);
  if (!body) {
    respond(ErrorResponse(body.error()));
    return;
  }
  auto credential = CredentialFromJson(name, *body);
  if (!credential) {
    respond(ErrorResponse(credential.error()));
    return;
  }
  // A token that cannot go into an Authorization header as it is (a CR or LF would add a header
  // of the caller's choosing); the adapters refuse to send one too.
  if (credential->platform != "webhook") {
    if (Status usable = adapters::CheckCredentialToken(credential->token); !usable.ok()) {
      respond(ErrorResponse({400, "invalid_request", usable.message(), "token"}));
      return;
    }
  }
  const std::string text = CredentialToJson(*credential).dump();
  asio::post(s.storage_pool(), [&s, tenant, text, c = std::move(*credential),
                                respond = std::move(respond)]() mutable {
    Status stored = s.store().PutSetting(CredentialKey(tenant, c.name), text);
    asio::post(s.io(), [&s, tenant, stored, c = std::move(c), respond = std::move(respond)] {
      if (!stored.ok()) {
        respond(ErrorResponse(FromStatus(stored)));
        return;
      }
      s.credentials().Put(tenant, c);
      // Names only: the token or secret is never logged.
      LogEvent(LogLevel::kInfo, "credential_registered",
               {{"tenant", tenant}, {"name", c.name}, {"platform", c.platform}});
      respond(JsonResponse(200, {{"tenant", tenant}, {"name", c.name}, {"platform", c.platform}}));
    });
  });
}

}  // namespace egress::service
