#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "adapters/platform_adapter.h"

namespace egress::config {

// A tenant declared in the config ([tenants.<tenant>]). Tenants the config does not name still
// work (weight 1); credentials may also be registered through the admin API.
struct TenantConfig {
  // Share in the deficit round robin between tenants. Default: 1.
  uint32_t weight = 1;
  // By credential name ([tenants.<tenant>.credentials.<name>]). Holds secrets: never log them.
  std::map<std::string, adapters::Credential> credentials;
};

}  // namespace egress::config
