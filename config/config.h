#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "adapters/curl_transport.h"
#include "config/cluster_options.h"
#include "config/platform_config.h"
#include "config/server_options.h"
#include "config/store_backend.h"
#include "config/tenant_config.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/scope_path.h"

namespace egress::config {

// Everything relay-egress reads from its configuration: the main file over the shipped platform
// profiles over built-in defaults (see LoadConfig and docs/configuration.md). Plain data; holds
// secrets (admin token, credentials): never log a Config as a whole. The service layer turns it
// into the service's options (dispatcher/service/service_options_from_config.h).
struct Config {
  ServerOptions server;
  // Indexed by Platform: the compiled-in four and the profile platforms (those with a profile).
  std::array<PlatformConfig, kMaxPlatforms> platforms;
  // Deployment default of each budget, indexed by pacing::BudgetName ([budgets.<name>]).
  std::array<pacing::Budget, pacing::kMaxBudgetNames> budgets;
  // The outbound HTTP client ([transport]).
  adapters::TransportOptions transport;
  // By tier name ([tiers.<tier>]).
  std::map<std::string, TierConfig> tiers;
  // Shared budgets through Redis ([cluster]); disabled by default.
  ClusterOptions cluster;
  // Where the deliveries are kept ([store]): the embedded RocksDB store by default.
  StoreBackendOptions store;
  // By tenant id ([tenants.<tenant>]).
  std::map<std::string, TenantConfig> tenants;
  // The files read, in the order applied (profiles first, the main file last).
  std::vector<std::string> sources;

  // Whether this config delivers to `p`: a compiled-in platform, or one a profile defined.
  bool Defines(Platform p) const {
    return static_cast<int>(p) < kBuiltinPlatformCount || platform(p).profile.has_value();
  }
  // The platforms it defines, in number order.
  std::vector<Platform> Platforms() const {
    std::vector<Platform> out;
    for (const Platform p : egress::Platforms()) {
      if (Defines(p)) {
        out.push_back(p);
      }
    }
    return out;
  }

  PlatformConfig& platform(Platform p) { return platforms[static_cast<size_t>(p)]; }
  const PlatformConfig& platform(Platform p) const { return platforms[static_cast<size_t>(p)]; }
  pacing::Budget& budget(pacing::BudgetName b) { return budgets[static_cast<size_t>(b)]; }
  const pacing::Budget& budget(pacing::BudgetName b) const {
    return budgets[static_cast<size_t>(b)];
  }
};

// The built-in defaults, before any file: the real platforms' base URLs, RetryPolicy's and
// SchedulerOptions' defaults, DefaultBudget() for every budget, no tenants.
Config DefaultConfig();

}  // namespace egress::config
