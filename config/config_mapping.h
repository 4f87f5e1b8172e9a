#pragma once

#include "adapters/curl_transport.h"
#include "adapters/http_transport.h"
#include "adapters/platform_adapter.h"
#include "config/config.h"
#include "dispatcher/pacing/budget_table.h"
#include "dispatcher/pacing/scheduler.h"
#include "storage/queue_store.h"

namespace egress::config {

// How the service builds its parts from a loaded Config. Pure functions.

// Retry policies and in-flight caps per platform; the other fields keep their defaults.
// Budgets are not part of SchedulerOptions: see ApplyBudgetDefaults.
pacing::SchedulerOptions ToSchedulerOptions(const Config& config);

// Base URLs of Slack, Discord and LINE, and the webhook SSRF policy.
adapters::PlatformEndpoints ToPlatformEndpoints(const Config& config);

// The [transport] section as is.
adapters::TransportOptions ToTransportOptions(const Config& config);

// The store under server.data_dir, with intake's payload cap.
storage::StoreOptions ToStoreOptions(const Config& config);

// Sets each [budgets.<name>] as the deployment default in `table`. TODO(config): Scheduler owns
// its BudgetTable and SchedulerOptions has no budget defaults yet; until it does, the service
// cannot hand these to the Scheduler. The values were validated by
// LoadConfig, so an error here means a Config built by hand.
Status ApplyBudgetDefaults(const Config& config, pacing::BudgetTable& table);

// Stamps a platform's timeouts on a request built by its adapter.
void ApplyTimeouts(const PlatformConfig& platform, adapters::HttpRequest& request);

}  // namespace egress::config
