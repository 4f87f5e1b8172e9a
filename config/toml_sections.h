#pragma once

// Internal to config/: the readers of each top-level section, shared by config/toml_*.cc.
// Each reads one file's table onto the Config built so far, so a later file overrides exactly
// the fields it sets. Errors are InvalidArgument "file:line: field: problem".

#include <optional>

#include "config/config.h"
#include "config/toml_fields.h"
#include "dispatcher/pacing/scope_path.h"

namespace egress::config {

// [server]
Status ReadServerSection(const TomlFields& server, ServerOptions& out);
// [transport]
Status ReadTransportSection(const TomlFields& transport, adapters::TransportOptions& out);
// [platforms.*]. A profile passes its own platform as `only`; any other platform is an error.
Status ReadPlatformsSection(const TomlFields& platforms, std::optional<Platform> only, Config& out);
// [budgets.*]. With `only` set (a profile), only that platform's budgets are allowed.
Status ReadBudgetsSection(const TomlFields& budgets, std::optional<Platform> only, Config& out);
// [cluster]
Status ReadClusterSection(const TomlFields& cluster, ClusterOptions& out);
// [tenants.*] with their credentials.
Status ReadTenantsSection(const TomlFields& tenants, Config& out);

}  // namespace egress::config
