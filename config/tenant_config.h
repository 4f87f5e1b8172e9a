#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "adapters/platform_adapter.h"

namespace egress::config {

// A tenant declared in the config ([tenants.<tenant>]). Tenants the config does not name still
// work (weight 1); credentials may also be registered through the admin API.
struct TenantConfig {
  // Share in the deficit round robin between tenants. Default: 1.
  uint32_t weight = 1;
  // By credential name ([tenants.<tenant>.credentials.<name>]). Holds secrets: never log them.
  std::map<std::string, adapters::Credential> credentials;
  // The SHA-256 digests of the tenant's API keys (api_keys: each the key or "sha256:<hex>"),
  // raw bytes (adapters/api_key.h). A key belongs to one tenant only. Default: none.
  std::vector<std::string> api_key_digests;
};

}  // namespace egress::config
