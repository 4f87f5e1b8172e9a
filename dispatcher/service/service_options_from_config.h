#pragma once

#include "adapters/curl_transport.h"
#include "adapters/platform_adapter.h"
#include "adapters/request_timeouts.h"
#include "config/config.h"
#include "dispatcher/pacing/scheduler.h"
#include "dispatcher/service/service.h"
#include "storage/queue_store.h"

namespace egress::service {

// The one mapping from a loaded config::Config to the options the service is built from. Every
// config value that reaches a running service goes through this file.
//
// Why here and not in config/: config sits below the service in the layers (base <- pacing <-
// storage <- adapters <- config <- service), so config/ cannot name ServiceOptions or the
// service's option structs (HttpServerOptions, IntakeLimits) without including a higher layer;
// and moving those structs down into config/ would tie the service's parts to the config's
// layout. The service layer already depends on config, so the mapping lives here and every
// layer stays one-way. config/ only reads and validates; it knows nothing of the service.
//
// Pure functions: no I/O. The Config is trusted to have been validated by LoadConfig (or built
// by hand in tests); nothing here fails.

// Everything RunService needs: listen address (already parsed), admin token, store, scheduler,
// budget defaults, endpoints, per-platform timeouts, transport, intake limits, backlog
// watermark, retention, tenants' weights and credentials. The fields the config does not set
// (storage_threads, http body cap and idle timeout) keep their defaults.
ServiceOptions ServiceOptionsFromConfig(const config::Config& config);

// The parts, each also used on its own (tests, tools).

// Retry policies and in-flight caps per platform, and the pacing margin; the other fields keep
// their defaults. Budgets are not part of SchedulerOptions: see ServiceOptions::budget_defaults.
pacing::SchedulerOptions ToSchedulerOptions(const config::Config& config);

// [cluster]: Redis address, key prefix, node id (default: server.listen), expected nodes and what
// to do while Redis is down; the lease sizes keep their defaults.
SharedBudgetOptions ToSharedBudgetOptions(const config::Config& config);

// [server.retention]: the ages (0 keeps a class) and the interval; the slice keeps its default.
RetentionOptions ToRetentionOptions(const config::Config& config);

// Base URLs of Slack, Discord and LINE, and the webhook SSRF policy.
adapters::PlatformEndpoints ToPlatformEndpoints(const config::Config& config);

// Each platform's connect_timeout and timeout, set on every request of that platform.
adapters::PlatformTimeouts ToPlatformTimeouts(const config::Config& config);

// The store under server.data_dir, with intake's payload cap.
storage::StoreOptions ToStoreOptions(const config::Config& config);

}  // namespace egress::service
