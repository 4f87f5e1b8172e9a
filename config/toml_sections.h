#pragma once

// Internal to config/: the readers of each top-level section, shared by config/toml_*.cc.
// Each reads one file's table onto the Config built so far, so a later file overrides exactly
// the fields it sets. Errors are InvalidArgument "file:line: field: problem".

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/load_config.h"
#include "config/toml_fields.h"
#include "dispatcher/pacing/scope_path.h"

namespace egress::config {

// [server]
Status ReadServerSection(const TomlFields& server, ServerOptions& out);
// [transport]
Status ReadTransportSection(const TomlFields& transport, adapters::TransportOptions& out);
// [platforms.*]. A profile passes its own platform as `only`; any other platform is an error.
Status ReadPlatformsSection(const TomlFields& platforms, std::optional<Platform> only, Config& out);
// A profile platform's definition in its [platforms.<p>] table (request, auth, oauth2, response,
// rules, scopes: toml_profile_section.cc) over `out`; registers the budgets its scopes name.
Status ReadProfileDefinition(const TomlFields& fields, Platform platform, PlatformConfig& out);
// After its profile file: InvalidArgument naming what a profile platform still lacks (a url, a
// scope, the oauth2 token_url its {access_token} needs). Its base_url may come from the main
// file: LoadConfig checks it at the end.
Status CheckProfileComplete(const TomlFields& fields, const PlatformConfig& platform);
// [budgets.*]. With `only` set (a profile), only that platform's budgets are allowed.
Status ReadBudgetsSection(const TomlFields& budgets, std::optional<Platform> only, Config& out);
// One budget table ({limit, scale_ms, burst}) over `out`.
Status ReadBudgetTable(const TomlFields& fields, pacing::Budget& out);
// The quotas table of a tier or a tenant ([...quotas.<name>]), replacing `out`.
Status ReadQuotasTable(const TomlFields& quotas, QuotaMap& out);
// [tiers.*] with their budgets and quotas.
Status ReadTiersSection(const TomlFields& tiers, Config& out);
// [cluster]
Status ReadClusterSection(const TomlFields& cluster, ClusterOptions& out);
// [store]
Status ReadStoreSection(const TomlFields& store, StoreBackendOptions& out);
// The reference `field`_file or `field`_env into `out`, when there is one; an error when both
// are there or either is not a non-empty string (the value is read later, by its reader).
Status ReadSecretRefField(const TomlFields& fields, std::string_view field,
                          std::optional<adapters::SecretRef>& out);
// [tenants.*] with their credentials, tier and quotas (tiers are read first).
Status ReadTenantsSection(const TomlFields& tenants, Config& out);

// One RELAY_EGRESS_<SECTION>_<KEY> variable: the table it addresses and the key in it.
struct EnvOverride {
  std::string variable;           // "RELAY_EGRESS_SERVER_RETENTION_DEAD"
  std::vector<std::string> path;  // {"server", "retention"}
  std::string key;                // "dead"
  std::string value;              // always a string; TomlFields converts (from_environment)
};

// The overrides in `environment`, sorted by variable name; the reserved variables (kReservedEnv)
// and those without the prefix are skipped. InvalidArgument naming the variable for a name that
// is not upper case or addresses no section (docs/configuration.md, "Environment overrides").
Result<std::vector<EnvOverride>> ParseEnvOverrides(const Environment& environment);

// A root table holding only the override's value at its path.
toml::table EnvOverrideTable(const EnvOverride& o);

}  // namespace egress::config
