#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "dispatcher/base/result.h"

namespace egress::config {

// Environment variables as (name, value) pairs.
using Environment = std::vector<std::pair<std::string, std::string>>;

struct LoadOptions {
  // A directory holding the four profiles slack.toml, discord.toml, line.toml and webhook.toml,
  // which then replace the built-in ones (all four must exist), and the profile platforms: every
  // other <name>.toml defines the platform <name> (docs/platforms.md, "Profile platforms").
  // Default (empty): the profiles compiled into the binary (config/builtin_profiles.h), the same
  // as config/profiles/ (the shipped profile platforms among them).
  std::string profiles_dir;
  // A directory of the operator's own profile platforms (<name>.toml each, none of the four),
  // loaded after those above; a platform defined twice is an error. The package creates
  // /etc/relay-egress/profiles.d, which `serve` reads when it exists. Default: none.
  std::string extra_profiles_dir;
  // Reads an environment variable (RELAY_EGRESS_ADMIN_TOKEN). Default (empty): the process
  // environment. Tests inject their own.
  std::function<std::optional<std::string>(std::string_view name)> getenv;
  // Every environment variable, for the RELAY_EGRESS_<SECTION>_<KEY> overrides. Default (empty):
  // the process environment. Tests inject their own.
  std::function<Environment()> environment;
};

// The environment variable that overrides [server] admin_token.
inline constexpr std::string_view kAdminTokenEnv = "RELAY_EGRESS_ADMIN_TOKEN";
// The secrets key (64 hex digits or base64 of 32 bytes), when server.secrets_key_file is not set.
inline constexpr std::string_view kSecretsKeyEnv = "RELAY_EGRESS_SECRETS_KEY";

// The config file `serve` reads when neither --config nor RELAY_EGRESS_CONFIG names one, if it
// exists (docs/deployment.md).
inline constexpr std::string_view kDefaultConfigPath = "/etc/relay-egress/relay-egress.toml";
// The directory of the operator's own profile platforms `serve` reads when it exists and
// --extra-profiles-dir names none (LoadOptions::extra_profiles_dir); the package creates it.
inline constexpr std::string_view kDefaultExtraProfilesDir = "/etc/relay-egress/profiles.d";
// The environment variable naming the config file when --config is not given.
inline constexpr std::string_view kConfigPathEnv = "RELAY_EGRESS_CONFIG";
// Variables with the RELAY_EGRESS_ prefix that are not <SECTION>_<KEY> overrides.
inline constexpr std::string_view kReservedEnv[] = {"RELAY_EGRESS_CONFIG", "RELAY_EGRESS_TOKEN",
                                                    "RELAY_EGRESS_ADMIN_TOKEN",
                                                    "RELAY_EGRESS_SECRETS_KEY"};

// Builds the Config: built-in defaults (DefaultConfig), then each profile (slack, discord, line,
// webhook, in that order; a profile may set only its own [platforms.<p>] and budgets), then each
// profile platform's file (name order: profiles_dir's or the built-in ones, then
// extra_profiles_dir's; each registers its platform and must define it), then the
// main file at `path` (none when empty), then every RELAY_EGRESS_<SECTION>_<KEY> variable in name
// order, then a non-empty RELAY_EGRESS_ADMIN_TOKEN. Each layer replaces exactly the fields it
// sets (a list such as retry.schedule is replaced whole). Command-line flags are the caller's to
// apply on top.
//
// Every problem is InvalidArgument "file:line: field: problem", e.g.
// "config/relay-egress.toml:12: budgets.slack_channel.limit: must be a positive integer": TOML
// syntax, unknown keys, unknown budget or platform names, wrong types, bad values. An unreadable
// file is "file: cannot read: reason". A bad override is "VARIABLE: field: problem", e.g.
// "RELAY_EGRESS_SERVER_MAX_CONNECTIONS: server.max_connections: must be a positive integer".
// Messages never contain a token or secret value.
// Blocking file I/O: call at start-up, not from the dispatcher loop.
Result<Config> LoadConfig(const std::string& path, const LoadOptions& options = {});

// The layers LoadConfig applies for the same arguments, merged into one TOML document (a later
// layer's value replaces an earlier one's; tables merge key by key), with every secret (admin
// token, credential tokens and secrets, API keys) shown as "(redacted)". Keys no layer sets keep
// their built-in defaults and are not shown. Fails exactly when LoadConfig fails. For
// `serve --print-config`.
Result<std::string> RenderConfig(const std::string& path, const LoadOptions& options = {});

}  // namespace egress::config
