// /api/admin/tenants/{tenant}/rate_limits, /quotas, /api_keys and /credentials/{name}, and
// /api/admin/quotas (GetQuotas serves GET /v1/quotas too). Route authorizes the caller
// (the admin token; a tenant key for its own /v1/quotas) before any of these runs.

#include <algorithm>
#include <chrono>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "adapters/api_key.h"
#include "adapters/credential_token.h"
#include "config/duration.h"
#include "dispatcher/base/saturating.h"
#include "dispatcher/base/time_text.h"
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

// Most keys one tenant may have at once (rotation needs two; a few per client is plenty).
constexpr size_t kMaxApiKeysPerTenant = 100;

// The digests of {"api_keys":[...]}, each entry the key or "sha256:<hex>"; 400 naming the entry
// (never echoing it) otherwise.
tl::expected<std::vector<std::string>, ApiError> ApiKeyDigests(const json& body) {
  if (!body.is_object() || !body.contains("api_keys") || !body["api_keys"].is_array()) {
    return tl::unexpected(ApiError{400, "invalid_request",
                                   "api_keys: required, a list of keys or \"sha256:<hex>\"",
                                   "api_keys"});
  }
  const json& list = body["api_keys"];
  if (list.size() > kMaxApiKeysPerTenant) {
    return tl::unexpected(ApiError{
        400, "invalid_request",
        fmt::format("api_keys: at most {} keys per tenant", kMaxApiKeysPerTenant), "api_keys"});
  }
  std::vector<std::string> digests;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = fmt::format("api_keys[{}]", i);
    if (!list[i].is_string()) {
      return tl::unexpected(ApiError{400, "invalid_request", field + ": must be a string", field});
    }
    auto digest = adapters::ParseApiKeyEntry(list[i].get<std::string>());
    if (!digest) {
      return tl::unexpected(
          ApiError{400, "invalid_request", field + ": " + digest.error().message(), field});
    }
    if (std::find(digests.begin(), digests.end(), *digest) != digests.end()) {
      return tl::unexpected(
          ApiError{400, "invalid_request", field + ": the same key twice", field});
    }
    digests.push_back(std::move(*digest));
  }
  return digests;
}

// 409 when a digest is another tenant's key or the admin token's: a key names one caller.
std::optional<ApiError> KeyConflict(Service& s, const std::string& tenant,
                                    const std::vector<std::string>& digests) {
  for (size_t i = 0; i < digests.size(); ++i) {
    const std::string field = fmt::format("api_keys[{}]", i);
    if (digests[i] == s.admin_token_digest()) {
      return ApiError{409, "api_key_conflict", field + ": this is the admin token", field};
    }
    auto owner = s.api_keys().TenantOf(digests[i]);
    if (owner && *owner != tenant) {
      return ApiError{409, "api_key_conflict",
                      field + ": already a key of another tenant; a key belongs to one tenant",
                      field};
    }
  }
  return std::nullopt;
}

// The JSON object body of a PUT for `tenant`, or the 400 that answers it.
tl::expected<json, ApiError> TenantObjectBody(Service& s, const std::string& tenant,
                                              const HttpRequest& request) {
  if (auto bad = CheckRequestText("tenant", tenant, s.options().store.max_field_bytes)) {
    return tl::unexpected(*bad);
  }
  auto body = ParseJsonBody(request);
  if (!body) {
    return tl::unexpected(body.error());
  }
  if (!body->is_object()) {
    return tl::unexpected(ApiError{400, "invalid_request", "body: must be a JSON object"});
  }
  return body;
}

}  // namespace

// handlers.h. Two PUTs of one setting end stored and in force alike: the writes are in order.
void StoreSettingThenApply(Service& s, std::string key, std::string text, Respond respond,
                           std::function<void(Respond)> apply, std::function<void()> undo) {
  s.settings_reloader().BeginLocalChange();
  asio::post(s.settings_writes(),
             [&s, key = std::move(key), text = std::move(text), respond = std::move(respond),
              apply = std::move(apply), undo = std::move(undo)]() mutable {
               Status stored = s.store().PutSetting(key, text);
               asio::post(s.io(), [&s, stored, respond = std::move(respond),
                                   apply = std::move(apply), undo = std::move(undo)]() mutable {
                 s.settings_reloader().EndLocalChange();
                 if (!stored.ok()) {
                   if (undo) {
                     undo();
                   }
                   respond(ErrorResponse(FromStatus(stored)));
                   return;
                 }
                 apply(std::move(respond));
               });
             });
}

void PutRateLimits(Service& s, const std::string& tenant, const HttpRequest& request,
                   Respond respond) {
  auto body = TenantObjectBody(s, tenant, request);
  if (!body) {
    respond(ErrorResponse(body.error()));
    return;
  }
  // Required, so that a misspelt key is a 400, not a PUT that clears every override.
  if (!body->contains("rate_limits")) {
    respond(ErrorResponse({400, "invalid_request",
                           "rate_limits: required ({\"rate_limits\":{}} clears the overrides)",
                           "rate_limits"}));
    return;
  }
  auto limits = ParseRateLimitSettings((*body)["rate_limits"]);
  if (!limits) {
    respond(ErrorResponse(limits.error()));
    return;
  }
  std::string text = limits->empty() ? "" : RateLimitsToJson(*limits).dump();
  StoreSettingThenApply(s, OverridesKey(tenant), text, std::move(respond),
                        [&s, tenant, text, limits = std::move(*limits)](Respond respond) {
                          Status st = s.SetTenantOverrides(tenant, limits.enforced);
                          if (st.ok()) {
                            st = s.SetTenantShadowLimits(tenant, limits.shadow);
                          }
                          if (!st.ok()) {
                            respond(ErrorResponse(FromStatus(st)));
                            return;
                          }
                          s.ShareTenantOverrides(tenant, text);
                          LogEvent(LogLevel::kInfo, "rate_limits_replaced",
                                   {{"tenant", tenant}, {"rate_limits", RateLimitsToJson(limits)}});
                          GetRateLimits(s, tenant, std::move(respond));
                        });
}

void GetRateLimits(Service& s, const std::string& tenant, Respond respond) {
  json budgets = json::object();
  for (int i = 0; i < pacing::kBudgetNameCount; ++i) {
    const auto name = static_cast<BudgetName>(i);
    const auto [budget, overridden] = s.EffectiveBudget(tenant, name);
    budgets[std::string(pacing::BudgetNameString(name))] = {
        {"limit", budget.limit},
        {"scale_ms", budget.scale_ms},
        {"burst", budget.burst},
        {"overridden", overridden},
        {"tier", !overridden && s.TierBudget(tenant, name).has_value()}};
  }
  // Shadow limits: metered and counted (relay_egress_shadow_throttled_total), never enforced.
  json shadow = json::object();
  for (const auto& [name, budget] : s.ShadowLimits(tenant)) {
    shadow[std::string(pacing::BudgetNameString(name))] = {
        {"limit", budget.limit}, {"scale_ms", budget.scale_ms}, {"burst", budget.burst}};
  }
  respond(JsonResponse(200, {{"tenant", tenant}, {"rate_limits", budgets}, {"shadow", shadow}}));
}

namespace {

// One tenant's quotas as GetQuotas answers them.
json QuotasAnswer(Service& s, const std::string& tenant) {
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  json quotas = json::object();
  for (const QuotaBook::Quota& q : s.quotas().QuotasOf(tenant)) {
    const QuotaBook::Usage u = s.quotas().UsageOf(tenant, q);
    quotas[q.name] = {{"limit", q.config.limit},
                      {"window", config::FormatDuration(q.config.window)},
                      {"window_ms", q.config.window.count()},
                      {"platforms", q.config.platforms},
                      {"source", q.own ? "tenant" : "tier"},
                      {"mode", q.config.shadow ? "shadow" : "enforce"},
                      {"used", u.used},
                      {"remaining", u.remaining},
                      {"resets_in_ms", u.reset_after_ms},
                      {"resets", FormatRfc3339Seconds(SatAdd(now_ms, u.reset_after_ms))}};
  }
  const std::string& tier = s.quotas().TierOf(tenant);
  return {{"tenant", tenant},
          {"tier", tier.empty() ? json(nullptr) : json(tier)},
          {"quotas", std::move(quotas)}};
}

}  // namespace

void GetQuotas(Service& s, const std::string& tenant, Respond respond) {
  if (auto bad = CheckRequestText("tenant", tenant, s.options().store.max_field_bytes)) {
    respond(ErrorResponse(*bad));
    return;
  }
  respond(JsonResponse(200, QuotasAnswer(s, tenant)));
}

void ListQuotas(Service& s, Respond respond) {
  json tenants = json::array();
  for (const std::string& tenant : s.quotas().Tenants()) {
    tenants.push_back(QuotasAnswer(s, tenant));
  }
  respond(JsonResponse(200, {{"tenants", std::move(tenants)}}));
}

void PutQuotas(Service& s, const std::string& tenant, const HttpRequest& request, Respond respond) {
  auto body = TenantObjectBody(s, tenant, request);
  if (!body) {
    respond(ErrorResponse(body.error()));
    return;
  }
  if (!body->contains("quotas")) {
    respond(
        ErrorResponse({400, "invalid_request",
                       "quotas: required ({\"quotas\":{}} goes back to the config's)", "quotas"}));
    return;
  }
  auto quotas = ParseQuotas((*body)["quotas"]);
  if (!quotas) {
    respond(ErrorResponse(quotas.error()));
    return;
  }
  // An empty map deletes the setting: the tenant goes back to its config's quotas and its tier's.
  std::string text = quotas->empty() ? "" : QuotasToJson(*quotas).dump();
  StoreSettingThenApply(s, QuotasKey(tenant), std::move(text), std::move(respond),
                        [&s, tenant, quotas = std::move(*quotas)](Respond respond) {
                          LogEvent(LogLevel::kInfo, "quotas_replaced",
                                   {{"tenant", tenant}, {"quotas", QuotasToJson(quotas)}});
                          s.quotas().SetOwnQuotas(
                              tenant, quotas.empty() ? std::nullopt : std::optional(quotas));
                          GetQuotas(s, tenant, std::move(respond));
                        });
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
  std::string text = CredentialToJson(*credential).dump();
  std::string key = CredentialKey(tenant, credential->name);
  StoreSettingThenApply(
      s, std::move(key), std::move(text), std::move(respond),
      [&s, tenant, c = std::move(*credential)](Respond respond) {
        s.credentials().Register(tenant, c);
        // Names only: the token or secret is never logged.
        LogEvent(LogLevel::kInfo, "credential_registered",
                 {{"tenant", tenant}, {"name", c.name}, {"platform", c.platform}});
        respond(
            JsonResponse(200, {{"tenant", tenant}, {"name", c.name}, {"platform", c.platform}}));
      });
}

void PutApiKeys(Service& s, const std::string& tenant, const HttpRequest& request,
                Respond respond) {
  auto body = TenantObjectBody(s, tenant, request);
  if (!body) {
    respond(ErrorResponse(body.error()));
    return;
  }
  auto digests = ApiKeyDigests(*body);
  if (!digests) {
    respond(ErrorResponse(digests.error()));
    return;
  }
  if (auto conflict = KeyConflict(s, tenant, *digests)) {
    respond(ErrorResponse(*conflict));
    return;
  }
  // In force before it is stored, unlike the other settings: the book is what keeps a key to
  // one tenant, so it takes the keys now (no later PUT can give them to another tenant while
  // this one is written) and gives them back if the write fails. Until the answer the keys work
  // but are not yet durable; a crash then loses a change the operator was never told of.
  std::vector<std::string> previous = s.api_keys().DigestsOf(tenant);
  if (Status st = s.api_keys().Replace(tenant, *digests); !st.ok()) {
    respond(ErrorResponse({409, "api_key_conflict", st.message(), "api_keys"}));
    return;
  }
  // Digests only, the one record kind of API keys.
  std::string text = ApiKeysToSetting(*digests);
  const size_t count = digests->size();
  std::sort(digests->begin(), digests->end());  // as DigestsOf answers (no repeats: checked)
  StoreSettingThenApply(
      s, ApiKeysKey(tenant), std::move(text), std::move(respond),
      [tenant, count](Respond respond) {
        // A count only: neither keys nor digests are logged.
        LogEvent(LogLevel::kInfo, "api_keys_replaced", {{"tenant", tenant}, {"api_keys", count}});
        respond(JsonResponse(200, {{"tenant", tenant}, {"api_keys", count}}));
      },
      [&s, tenant, taken = std::move(*digests), previous = std::move(previous)] {
        // Back to the keys the store holds, unless a later PUT has replaced these meanwhile.
        if (s.api_keys().DigestsOf(tenant) == taken) {
          (void)s.api_keys().Replace(tenant, previous);
        }
      });
}

}  // namespace egress::service
