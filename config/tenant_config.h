#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/credential_refs.h"
#include "adapters/ip_network.h"
#include "adapters/platform_adapter.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget.h"
#include "storage/delivery.h"

namespace egress::config {

// A quota ([tiers.<tier>.quotas.<name>] or [tenants.<tenant>.quotas.<name>]): at most `limit`
// units (each delivery's cost, docs/costs.md) in any `window`, counted with a sliding window
// (pacing::SlidingWindowCounter) over the deliveries of `platforms` (empty: every platform).
struct QuotaConfig {
  int64_t limit = 0;                   // 1 to kMaxQuotaLimit
  Millis window{0};                    // kMinQuotaWindow to kMaxQuotaWindow
  std::vector<std::string> platforms;  // platform names, sorted, no repeats
  // mode = "shadow": counted, never enforced (docs/costs.md, "Shadow quotas"): what it would
  // have refused is accepted and counted in relay_egress_quota_shadow_rejections_total.
  bool shadow = false;

  friend bool operator==(const QuotaConfig&, const QuotaConfig&) = default;
};
inline constexpr int64_t kMaxQuotaLimit = storage::kMaxChargeUnits;
inline constexpr Millis kMinQuotaWindow{1000};
inline constexpr Millis kMaxQuotaWindow{storage::kMaxChargeWindowMs};
// Quota names: 1 to 64 of A-Z a-z 0-9 _ . - (they appear in headers and metric labels).
inline constexpr size_t kMaxQuotaNameBytes = storage::kMaxChargeQuotaName;
using storage::ValidQuotaName;
// Most quotas one tier or tenant may have (each delivery is charged to each that applies).
inline constexpr size_t kMaxQuotas = 16;
using QuotaMap = std::map<std::string, QuotaConfig>;

// A tier ([tiers.<tier>]): budget defaults and quotas for the tenants that name it.
struct TierConfig {
  // [tiers.<tier>.budgets.<name>]: over the deployment default, under a tenant's own override.
  std::vector<std::pair<pacing::BudgetName, pacing::Budget>> budgets;
  // [tiers.<tier>.quotas.<name>]
  QuotaMap quotas;
};

// A tenant declared in the config ([tenants.<tenant>]). Tenants the config does not name still
// work (weight 1); credentials may also be registered through the admin API.
struct TenantConfig {
  // Share in the deficit round robin between tenants. Default: 1.
  uint32_t weight = 1;
  // The most deliveries the tenant has in flight at once on one platform; 0 (unset): a fair
  // share, the platform's max_in_flight_per_platform divided by the tenants with deliveries in
  // flight on it, rounded up. Default: 0.
  int max_in_flight = 0;
  // By credential name ([tenants.<tenant>.credentials.<name>]). Holds secrets: never log them.
  std::map<std::string, adapters::Credential> credentials;
  // The references of the credentials given by token_file / token_env / secret_file /
  // secret_env, by credential name: read at load (into `credentials`) and again on SIGHUP.
  std::map<std::string, adapters::CredentialRefs> credential_refs;
  // This tenant's customer URLs may reach private networks; unset follows
  // [platforms.webhook] allow_private_networks. Default: unset.
  std::optional<bool> allow_private_networks;
  // Private ranges opened for this tenant only ("10.20.0.0/16"). Default: none.
  std::vector<adapters::IpNetwork> allowed_cidrs;
  // The SHA-256 digests of the tenant's API keys (api_keys: each the key or "sha256:<hex>"),
  // raw bytes (adapters/api_key.h). A key belongs to one tenant only. Default: none.
  std::vector<std::string> api_key_digests;
  // The tier ([tiers.<tier>], which must exist) whose budgets and quotas the tenant inherits.
  // Default: none.
  std::string tier;
  // The tenant's own quotas: over the tier's of the same name. Default: none.
  QuotaMap quotas;
  // Bytes the tenant's delivery records may take in the store before intake answers 429
  // storage_quota_exceeded; 0: server.tenant_max_stored_bytes. 0 to kMaxStoredBytesBound
  // (server_options.h). Default: 0.
  uint64_t max_stored_bytes = 0;
};

}  // namespace egress::config
