// /api/admin/tenants/{tenant}/rate_limits and /credentials/{name}. The caller checks the
// admin token (Route) before any of these runs.

#include <fmt/format.h>

#include "dispatcher/service/api_handlers.h"
#include "dispatcher/service/api_http.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

using dispatcher::Budget;
using dispatcher::BudgetName;
using nlohmann::json;

bool PositiveInt(const json& v) { return v.is_number_integer() && v.get<int64_t>() > 0; }

}  // namespace

void PutRateLimits(Service& s, const std::string& tenant, const HttpRequest& request,
                   Respond respond) {
  auto body = ParseJsonBody(request);
  if (!body) {
    respond(ErrorResponse(body.error()));
    return;
  }
  if (!body->is_object()) {
    respond(ErrorResponse({400, "invalid_request", "body: must be a JSON object"}));
    return;
  }
  const json limits = body->value("rate_limits", json::object());
  if (!limits.is_object()) {
    respond(
        ErrorResponse({400, "invalid_request", "rate_limits: must be an object", "rate_limits"}));
    return;
  }
  std::vector<std::pair<BudgetName, Budget>> overrides;
  for (const auto& [name, value] : limits.items()) {
    auto budget_name = dispatcher::ParseBudgetName(name);
    const std::string field = "rate_limits." + name;
    if (!budget_name) {
      respond(ErrorResponse({400, "unknown_budget", field + ": unknown budget name", field}));
      return;
    }
    if (!value.is_object() || !value.contains("scale_ms") || !value.contains("limit") ||
        !PositiveInt(value["scale_ms"]) || !PositiveInt(value["limit"]) ||
        (value.contains("burst") && !PositiveInt(value["burst"]))) {
      respond(ErrorResponse(
          {400, "invalid_budget", field + ": needs positive integer scale_ms and limit", field}));
      return;
    }
    Budget b{value["limit"].get<int64_t>(), value["scale_ms"].get<int64_t>(),
             value.contains("burst") ? value["burst"].get<int64_t>() : 1};
    overrides.emplace_back(*budget_name, b);
  }
  if (Status st = s.SetTenantOverrides(tenant, overrides); !st.ok()) {
    respond(ErrorResponse(FromStatus(st)));
    return;
  }
  GetRateLimits(s, tenant, std::move(respond));
}

void GetRateLimits(Service& s, const std::string& tenant, Respond respond) {
  json budgets = json::object();
  for (int i = 0; i < dispatcher::kBudgetNameCount; ++i) {
    const auto name = static_cast<BudgetName>(i);
    const auto [budget, overridden] = s.EffectiveBudget(tenant, name);
    budgets[std::string(dispatcher::BudgetNameString(name))] = {{"limit", budget.limit},
                                                                {"scale_ms", budget.scale_ms},
                                                                {"burst", budget.burst},
                                                                {"overridden", overridden}};
  }
  respond(JsonResponse(200, {{"tenant", tenant}, {"rate_limits", budgets}}));
}

void PutCredential(Service& s, const std::string& tenant, const std::string& name,
                   const HttpRequest& request, Respond respond) {
  auto body = ParseJsonBody(request);
  if (!body || !body->is_object()) {
    respond(ErrorResponse(body ? ApiError{400, "invalid_request", "body: must be a JSON object"}
                               : body.error()));
    return;
  }
  adapters::Credential c;
  c.name = name;
  c.platform = body->value("platform", std::string());
  if (c.platform != "slack" && c.platform != "discord" && c.platform != "line" &&
      c.platform != "webhook") {
    respond(ErrorResponse(
        {422, "unknown_platform", "platform: slack, discord, line or webhook", "platform"}));
    return;
  }
  if (c.platform == "webhook") {
    if (body->contains("secret") && (*body)["secret"].is_string()) {
      c.secrets.push_back((*body)["secret"]);
    } else if (body->contains("secrets") && (*body)["secrets"].is_array()) {
      for (const json& v : (*body)["secrets"]) {
        if (v.is_string()) {
          c.secrets.push_back(v);
        }
      }
    }
    if (c.secrets.empty()) {
      respond(ErrorResponse(
          {400, "invalid_request", "secret: required for webhook credentials", "secret"}));
      return;
    }
  } else {
    c.token = body->value("token", std::string());
    if (c.token.empty()) {
      respond(ErrorResponse({400, "invalid_request", "token: required", "token"}));
      return;
    }
  }
  s.credentials().Put(tenant, c);
  respond(JsonResponse(200, {{"tenant", tenant}, {"name", name}, {"platform", c.platform}}));
}

}  // namespace egress::service
