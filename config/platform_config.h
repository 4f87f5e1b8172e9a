#pragma once

#include <optional>
#include <string>

#include "adapters/profile_spec.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/platform_scopes.h"
#include "dispatcher/pacing/retry_policy.h"

namespace egress::config {

// One platform's settings ([platforms.<platform>] in a profile or the main file).
struct PlatformConfig {
  // Where the platform's API lives: "https://slack.com", "https://discord.com",
  // "https://api.line.me"; a simulator's http://127.0.0.1:PORT in demos. Empty for webhooks
  // (each destination is its own URL).
  std::string base_url;
  // Webhooks only: lets destinations resolve to loopback and private addresses. Default: false.
  bool allow_private_networks = false;
  // How transient failures are retried ([platforms.<platform>.retry]).
  pacing::RetryPolicy retry;
  // Per attempt. Defaults: 5 s to connect, 15 s in all.
  Millis connect_timeout{5'000};
  Millis timeout{15'000};
  // In-flight caps (SchedulerOptions). Defaults: per destination 1 for Slack and Discord, 4 for
  // LINE and webhooks; 256 per platform.
  int max_in_flight_per_destination = 4;
  int max_in_flight_per_platform = 256;
  // The platform's own trust store: when either is set, the CAs its servers must chain to
  // instead of [transport] ca_file / ca_path (adapters::RequestTrust). Checked by
  // --check-config and at start (adapters::CheckTrustFiles). Default: neither.
  std::string ca_file;
  std::string ca_path;
  // A profile platform's definition: how its requests are built and its responses read
  // (adapters::ProfileSpec, base_url filled in by the service) and the scopes it is paced by.
  // Unset for the compiled-in four (docs/platforms.md, "Profile platforms").
  std::optional<adapters::ProfileSpec> profile;
  pacing::PlatformScopes scopes;
};

}  // namespace egress::config
