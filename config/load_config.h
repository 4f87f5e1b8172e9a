#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "dispatcher/base/result.h"

namespace egress::config {

struct LoadOptions {
  // The directory holding the shipped profiles slack.toml, discord.toml, line.toml and
  // webhook.toml; all four must exist. Default (empty): "profiles" next to the main file.
  std::string profiles_dir;
  // Reads an environment variable (RELAY_EGRESS_ADMIN_TOKEN). Default (empty): the process
  // environment. Tests inject their own.
  std::function<std::optional<std::string>(std::string_view name)> getenv;
};

// The environment variable that overrides [server] admin_token.
inline constexpr std::string_view kAdminTokenEnv = "RELAY_EGRESS_ADMIN_TOKEN";
// The secrets key (64 hex digits or base64 of 32 bytes), when server.secrets_key_file is not set.
inline constexpr std::string_view kSecretsKeyEnv = "RELAY_EGRESS_SECRETS_KEY";

// Builds the Config: built-in defaults (DefaultConfig), then each profile (slack, discord, line,
// webhook, in that order; a profile may set only its own [platforms.<p>] and budgets), then the
// main file at `path`, then a non-empty RELAY_EGRESS_ADMIN_TOKEN. Each layer replaces exactly the
// fields it sets (a list such as retry.schedule is replaced whole). Command-line flags are the
// caller's to apply on top.
//
// Every problem is InvalidArgument "file:line: field: problem", e.g.
// "config/relay-egress.toml:12: budgets.slack_channel.limit: must be a positive integer": TOML
// syntax, unknown keys, unknown budget or platform names, wrong types, bad values. An unreadable
// file is "file: cannot read: reason". Messages never contain a token or secret value.
// Blocking file I/O: call at start-up, not from the dispatcher loop.
Result<Config> LoadConfig(const std::string& path, const LoadOptions& options = {});

}  // namespace egress::config
