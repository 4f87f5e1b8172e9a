#include "dispatcher/service/tenant_settings.h"

#include <algorithm>

#include <fmt/format.h>

#include "adapters/api_key.h"
#include "adapters/webhook_signature.h"
#include "config/duration.h"
#include "dispatcher/pacing/scope_path.h"

namespace egress::service {
namespace {

using nlohmann::json;

bool PositiveInt(const json& v) { return v.is_number_integer() && v.get<int64_t>() > 0; }

// The string field `key` of `body` into `out` (empty when absent); false when it is there but
// not a string. Never throws, unlike json::value on a mistyped field.
bool OptionalString(const json& body, const char* key, std::string& out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    return true;
  }
  if (!it->is_string()) {
    return false;
  }
  out = it->get<std::string>();
  return true;
}

}  // namespace

tl::expected<RateLimitSettings, ApiError> ParseRateLimitSettings(const json& limits) {
  if (!limits.is_object()) {
    return tl::unexpected(
        ApiError{400, "invalid_request", "rate_limits: must be an object", "rate_limits"});
  }
  RateLimitSettings out;
  for (const auto& [name, value] : limits.items()) {
    auto budget_name = pacing::ParseBudgetName(name);
    const std::string field = "rate_limits." + name;
    if (!budget_name) {
      return tl::unexpected(
          ApiError{400, "unknown_budget", field + ": unknown budget name", field});
    }
    if (!value.is_object() || !value.contains("scale_ms") || !value.contains("limit") ||
        !PositiveInt(value["scale_ms"]) || !PositiveInt(value["limit"]) ||
        (value.contains("burst") && !PositiveInt(value["burst"]))) {
      return tl::unexpected(ApiError{400, "invalid_budget",
                                     field + ": needs positive integer scale_ms and limit", field});
    }
    bool shadow = false;
    if (auto mode = value.find("mode"); mode != value.end()) {
      if (!mode->is_string() || (*mode != "enforce" && *mode != "shadow")) {
        return tl::unexpected(ApiError{
            400, "invalid_budget", field + ".mode: \"enforce\" or \"shadow\"", field + ".mode"});
      }
      shadow = *mode == "shadow";
    }
    const pacing::Budget budget{value["limit"].get<int64_t>(), value["scale_ms"].get<int64_t>(),
                                value.contains("burst") ? value["burst"].get<int64_t>() : 1};
    if (!budget.Valid()) {
      return tl::unexpected(ApiError{
          400, "invalid_budget",
          fmt::format("{}: limit must be at most {}, scale_ms at most {} (366 days), burst at "
                      "most {}",
                      field, pacing::kMaxBudgetLimit, pacing::kMaxBudgetScaleMs,
                      pacing::kMaxBudgetBurst),
          field});
    }
    (shadow ? out.shadow : out.enforced).emplace_back(*budget_name, budget);
  }
  return out;
}

tl::expected<BudgetOverrides, ApiError> ParseRateLimits(const json& limits) {
  auto parsed = ParseRateLimitSettings(limits);
  if (!parsed) {
    return tl::unexpected(parsed.error());
  }
  return std::move(parsed->enforced);
}

json RateLimitsToJson(const RateLimitSettings& limits) {
  json j = RateLimitsToJson(limits.enforced);
  for (const auto& [name, b] : limits.shadow) {
    j[std::string(pacing::BudgetNameString(name))] = {
        {"limit", b.limit}, {"scale_ms", b.scale_ms}, {"burst", b.burst}, {"mode", "shadow"}};
  }
  return j;
}

json RateLimitsToJson(const BudgetOverrides& overrides) {
  json j = json::object();
  for (const auto& [name, b] : overrides) {
    j[std::string(pacing::BudgetNameString(name))] = {
        {"limit", b.limit}, {"scale_ms", b.scale_ms}, {"burst", b.burst}};
  }
  return j;
}

bool SameOverrides(const BudgetOverrides& a, const BudgetOverrides& b) {
  // Objects compare by key, so the order of the budgets does not matter.
  return RateLimitsToJson(a) == RateLimitsToJson(b);
}

tl::expected<config::QuotaMap, ApiError> ParseQuotas(const json& quotas) {
  if (!quotas.is_object()) {
    return tl::unexpected(ApiError{400, "invalid_request", "quotas: must be an object", "quotas"});
  }
  if (quotas.size() > config::kMaxQuotas) {
    return tl::unexpected(ApiError{400, "invalid_request",
                                   fmt::format("quotas: at most {} quotas", config::kMaxQuotas),
                                   "quotas"});
  }
  config::QuotaMap out;
  for (const auto& [name, value] : quotas.items()) {
    const std::string field = "quotas." + name;
    if (!config::ValidQuotaName(name)) {
      return tl::unexpected(
          ApiError{400, "invalid_quota",
                   fmt::format("quotas: a quota name is 1 to {} of A-Z a-z 0-9 _ . -",
                               config::kMaxQuotaNameBytes),
                   "quotas"});
    }
    config::QuotaConfig q;
    if (!value.is_object() || !value.contains("limit") || !value["limit"].is_number_integer() ||
        value["limit"].get<int64_t>() < 1 ||
        value["limit"].get<int64_t>() > config::kMaxQuotaLimit) {
      return tl::unexpected(
          ApiError{400, "invalid_quota",
                   fmt::format("{}.limit: an integer from 1 to {}", field, config::kMaxQuotaLimit),
                   field + ".limit"});
    }
    q.limit = value["limit"].get<int64_t>();
    auto window = value.find("window");
    Result<Millis> parsed = window != value.end() && window->is_string()
                                ? config::ParseDuration(window->get<std::string>())
                                : Result<Millis>(Status::InvalidArgument("required, e.g. \"30d\""));
    if (!parsed || *parsed < config::kMinQuotaWindow || *parsed > config::kMaxQuotaWindow) {
      return tl::unexpected(
          ApiError{400, "invalid_quota",
                   fmt::format("{}.window: {}", field,
                               parsed ? "must be from 1s to 366d" : parsed.error().message()),
                   field + ".window"});
    }
    q.window = *parsed;
    if (auto platforms = value.find("platforms"); platforms != value.end()) {
      if (!platforms->is_array() || platforms->size() > static_cast<size_t>(kMaxPlatforms)) {
        return tl::unexpected(ApiError{
            400, "invalid_quota", field + ".platforms: a list of platforms", field + ".platforms"});
      }
      for (const json& p : *platforms) {
        if (!p.is_string() || !ParsePlatform(p.get<std::string>())) {
          return tl::unexpected(ApiError{400, "invalid_quota",
                                         field + ".platforms: each a platform's name",
                                         field + ".platforms"});
        }
        q.platforms.push_back(p.get<std::string>());
      }
      std::sort(q.platforms.begin(), q.platforms.end());
      q.platforms.erase(std::unique(q.platforms.begin(), q.platforms.end()), q.platforms.end());
    }
    if (auto mode = value.find("mode"); mode != value.end()) {
      if (!mode->is_string() || (*mode != "enforce" && *mode != "shadow")) {
        return tl::unexpected(ApiError{
            400, "invalid_quota", field + ".mode: \"enforce\" or \"shadow\"", field + ".mode"});
      }
      q.shadow = *mode == "shadow";
    }
    out[name] = std::move(q);
  }
  return out;
}

json QuotasToJson(const config::QuotaMap& quotas) {
  json j = json::object();
  for (const auto& [name, q] : quotas) {
    j[name] = {{"limit", q.limit},
               {"window", config::FormatDuration(q.window)},
               {"platforms", q.platforms}};
    if (q.shadow) {
      j[name]["mode"] = "shadow";
    }
  }
  return j;
}

json CredentialToJson(const adapters::Credential& c) {
  json j = {{"platform", c.platform}, {"token", c.token}, {"secrets", c.secrets}};
  if (!c.client_id.empty()) {
    j["client_id"] = c.client_id;
    j["client_secret"] = c.client_secret;
  }
  return j;
}

tl::expected<adapters::Credential, ApiError> CredentialFromJson(const std::string& name,
                                                                const json& body) {
  if (!body.is_object()) {
    return tl::unexpected(ApiError{400, "invalid_request", "body: must be a JSON object"});
  }
  adapters::Credential c;
  c.name = name;
  if (!OptionalString(body, "platform", c.platform) || !ParsePlatform(c.platform)) {
    return tl::unexpected(ApiError{422, "unknown_platform",
                                   "platform: a platform's name (slack, discord, line, "
                                   "webhook or a profile platform's)",
                                   "platform"});
  }
  if (c.platform == "webhook") {
    if (body.contains("secret") && body["secret"].is_string()) {
      c.secrets.push_back(body["secret"]);
    }
    if (body.contains("secrets") && body["secrets"].is_array()) {
      for (const json& v : body["secrets"]) {
        if (v.is_string()) {
          c.secrets.push_back(v);
        }
      }
    }
    for (const std::string& secret : c.secrets) {
      if (auto key = adapters::ParseWebhookSecret(secret); !key) {
        // The message names the problem, never the secret.
        return tl::unexpected(
            ApiError{400, "invalid_secret", "secret: " + key.error().message(), "secret"});
      }
    }
    if (c.secrets.empty()) {
      return tl::unexpected(
          ApiError{400, "invalid_request", "secret: required for webhook credentials", "secret"});
    }
    return c;
  }
  if (body.contains("client_id") || body.contains("client_secret")) {
    // OAuth2 client credentials (a profile platform with [oauth2]).
    if (!OptionalString(body, "client_id", c.client_id) || c.client_id.empty() ||
        c.client_id.size() > 256) {
      return tl::unexpected(
          ApiError{400, "invalid_request", "client_id: a string of 1 to 256 bytes", "client_id"});
    }
    if (!OptionalString(body, "client_secret", c.client_secret) || c.client_secret.empty() ||
        c.client_secret.size() > 1024) {
      return tl::unexpected(ApiError{
          400, "invalid_request", "client_secret: a string of 1 to 1024 bytes", "client_secret"});
    }
    return c;
  }
  if (!OptionalString(body, "token", c.token)) {
    return tl::unexpected(ApiError{400, "invalid_request", "token: must be a string", "token"});
  }
  if (c.token.empty()) {
    return tl::unexpected(ApiError{400, "invalid_request", "token: required", "token"});
  }
  return c;
}

std::string ApiKeysToSetting(const std::vector<std::string>& digests) {
  json hex = json::array();
  for (const std::string& digest : digests) {
    // "sha256:<hex>" less its prefix.
    hex.push_back(adapters::ApiKeyDigestText(digest).substr(7));
  }
  return json{{"sha256", hex}}.dump();
}

std::optional<std::vector<std::string>> ApiKeysFromSetting(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("sha256") || !j["sha256"].is_array()) {
    return std::nullopt;
  }
  std::vector<std::string> digests;
  for (const json& hex : j["sha256"]) {
    if (!hex.is_string()) {
      return std::nullopt;
    }
    auto digest = adapters::ParseApiKeyEntry("sha256:" + hex.get<std::string>());
    if (!digest) {
      return std::nullopt;
    }
    digests.push_back(std::move(*digest));
  }
  return digests;
}

}  // namespace egress::service
