#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "adapters/platform_adapter.h"
#include "config/tenant_config.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/service/api/error.h"

namespace egress::service {

using BudgetOverrides = std::vector<std::pair<pacing::BudgetName, pacing::Budget>>;

// A tenant's operator rate limits: the overrides in force, and the shadow ones (metered and
// counted, never enforced: docs/api.md, "Shadow limits").
struct RateLimitSettings {
  BudgetOverrides enforced;
  BudgetOverrides shadow;
  bool empty() const { return enforced.empty() && shadow.empty(); }
};

// {"webhook_destination":{"scale_ms":1000,"limit":20,"burst"?:N,"mode"?:"enforce"|"shadow"},
// ...} -> the tenant's rate limits; a 400 naming the first unknown budget, bad value or mode. A
// budget is either enforced or shadow (one entry per name). The same text is persisted as the
// store setting "overrides/<tenant>" and read back on start.
tl::expected<RateLimitSettings, ApiError> ParseRateLimitSettings(const nlohmann::json& limits);
// The enforced overrides alone (shadow entries are checked and left out).
tl::expected<BudgetOverrides, ApiError> ParseRateLimits(const nlohmann::json& limits);
nlohmann::json RateLimitsToJson(const RateLimitSettings& limits);
nlohmann::json RateLimitsToJson(const BudgetOverrides& overrides);
// Whether `a` and `b` set the same budgets to the same values, in whatever order.
bool SameOverrides(const BudgetOverrides& a, const BudgetOverrides& b);

// A credential as persisted ("credentials/<tenant>\x1f<name>"): platform, token, secrets.
nlohmann::json CredentialToJson(const adapters::Credential& c);
tl::expected<adapters::Credential, ApiError> CredentialFromJson(const std::string& name,
                                                                const nlohmann::json& j);

// A tenant's API keys as persisted ("api_keys/<tenant>"): {"sha256":["<64 hex>", ...]}, the
// digests only, never a key (adapters/api_key.h). The one record kind API keys are stored as:
// written by PUT /api/admin/tenants/{tenant}/api_keys, read back on start.
inline constexpr std::string_view kApiKeysPrefix = "api_keys/";
inline std::string ApiKeysKey(const std::string& tenant) {
  return std::string(kApiKeysPrefix) + tenant;
}
std::string ApiKeysToSetting(const std::vector<std::string>& digests);
// nullopt when `text` is not such a record.
std::optional<std::vector<std::string>> ApiKeysFromSetting(const std::string& text);

// {"monthly":{"limit":N,"window":"30d","platforms"?:["line"]}, ...} -> a tenant's own quotas; a
// 400 naming the first bad quota or field. The same text is persisted as the store setting
// "quotas/<tenant>" and read back on start.
tl::expected<config::QuotaMap, ApiError> ParseQuotas(const nlohmann::json& quotas);
nlohmann::json QuotasToJson(const config::QuotaMap& quotas);
inline constexpr std::string_view kQuotasPrefix = "quotas/";
inline std::string QuotasKey(const std::string& tenant) {
  return std::string(kQuotasPrefix) + tenant;
}

inline constexpr std::string_view kOverridesPrefix = "overrides/";
inline std::string OverridesKey(const std::string& tenant) {
  return std::string(kOverridesPrefix) + tenant;
}
inline constexpr std::string_view kCredentialsPrefix = "credentials/";
inline std::string CredentialKey(const std::string& tenant, const std::string& name) {
  return std::string(kCredentialsPrefix) + tenant + "\x1f" + name;
}

}  // namespace egress::service
