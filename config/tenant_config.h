#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "adapters/credential_refs.h"
#include "adapters/ip_network.h"
#include "adapters/platform_adapter.h"

namespace egress::config {

// A tenant declared in the config ([tenants.<tenant>]). Tenants the config does not name still
// work (weight 1); credentials may also be registered through the admin API.
struct TenantConfig {
  // Share in the deficit round robin between tenants. Default: 1.
  uint32_t weight = 1;
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
};

}  // namespace egress::config
