#pragma once

#include <optional>
#include <string>

namespace egress::service {

// The tenant a request is confined to; nullopt: every tenant (the admin token, or auth off).
using TenantScope = std::optional<std::string>;

// Who a request acts as (docs/api.md, "Authentication"), found from its headers alone before any
// of its body is read (auth.h).
struct Principal {
  enum class Kind {
    kAdmin,   // the admin token: every tenant, every route
    kTenant,  // a tenant's API key: that tenant's work only, no admin route, no /metrics
    kAnyone,  // no credential while auth is off, or an open route: every tenant, no admin route
  };
  Kind kind = Kind::kAnyone;
  std::string tenant;  // kTenant only

  bool admin() const { return kind == Kind::kAdmin; }
  // The tenant the request is confined to; nullopt: every tenant.
  TenantScope scope() const { return kind == Kind::kTenant ? TenantScope(tenant) : std::nullopt; }
};

}  // namespace egress::service
