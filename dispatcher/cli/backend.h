#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dispatcher/base/result.h"
#include "dispatcher/cli/http_client.h"

namespace egress::cli {

// A page of destinations (GET /v1/destinations): filters, order, size and where to go on from.
// Empty fields match everything; `limit` 0: the default (100).
struct DestinationsQuery {
  std::string platform;
  std::string tenant;
  std::string sort;  // "key" (the default) or "oldest_deferral" (the service only)
  std::string cursor;
  int limit = 0;
};

// Which deliveries a list or a replay-by-filter means. Empty fields match everything.
struct DeliveryFilter {
  std::string state;
  std::string tenant;
  std::string platform;
  std::string destination;
  std::string reason;               // a prefix
  std::optional<int64_t> since_ms;  // created at or after, Unix ms
  std::optional<int64_t> until_ms;  // created before, Unix ms
  std::string cursor;
  int limit = 0;  // 0: the server's default
};

// Told how far a replay by filter has got: deliveries looked at and replayed so far.
using ReplayProgress = std::function<void(uint64_t matched, uint64_t replayed)>;

// Where commands get their answers: the running service (ServiceBackend) or the store opened
// directly (StoreBackend). Every answer is JSON in the service API's shapes (docs/api.md; a
// delivery is storage/delivery_json.h's view from either), so output code does not care which
// one answered. StoreBackend's replay and cancel are storage/operator_actions.h, as the
// service's are.
// Errors: NotFound, FailedPrecondition (nothing to do), InvalidArgument (bad input), Unavailable
// (service unreachable), Busy (store in use), others for storage and protocol faults.
class Backend {
 public:
  virtual ~Backend() = default;
  // {"deliveries": [...], "next_cursor": string|null}
  virtual Result<nlohmann::json> List(const DeliveryFilter& filter) = 0;
  virtual Result<nlohmann::json> Get(const std::string& id) = 0;
  // {"id", "state": "queued"}
  virtual Result<nlohmann::json> Replay(const std::string& id) = 0;
  // {"matched", "replayed", "dry_run"} (and "job" from the service); filter.state is dead or
  // deferred. A dry run counts (at most storage::kMaxReplayPerCall) and answers at once. A
  // replay works through every match in slices and calls `progress`, when set, after each: the
  // service runs it as a job (POST /v1/deliveries/replay, then GET /v1/jobs/{id} every 200 ms
  // until it ends; each call short); the store does the slices itself. A job that failed or
  // vanished (the service restarted) is an IoError naming it and its counts.
  virtual Result<nlohmann::json> ReplayMatching(const DeliveryFilter& filter, bool dry_run,
                                                const ReplayProgress& progress = nullptr) = 0;
  // {"id", "state": "cancelled"}
  virtual Result<nlohmann::json> Cancel(const std::string& id) = 0;
  // Counts by state, and with the service, its counters.
  virtual Result<nlohmann::json> Stats() = 0;
  // {"destinations": [...], "next_cursor": "..." or null}: one page.
  virtual Result<nlohmann::json> Destinations(const DestinationsQuery& query) = 0;
  // {"key", "enabled": true}
  virtual Result<nlohmann::json> Enable(const std::string& key) = 0;
  // The service's Prometheus text (GET /metrics); Unavailable from the store.
  virtual Result<std::string> Metrics() = 0;
  // A tenant's quotas (GET /api/admin/tenants/{tenant}/quotas) or, with `tenant` empty, every
  // tenant's ({"tenants":[...]}, GET /api/admin/quotas); Unavailable from the store (the tiers
  // and quotas are the running service's).
  virtual Result<nlohmann::json> Quotas(const std::string& tenant) = 0;
  // The operator's pauses (docs/api.md, "Pauses"): {"pauses":[...]} (GET /api/admin/pauses);
  // the pause `scope` makes ({"tenant"?, "platform"?, "credential"?, "destination"?,
  // "reason"?}; POST), the one in force with that scope if any; the pause `id` ended,
  // {"id", ..., "resumed": true} (DELETE /api/admin/pauses/{id}). Unavailable from the store
  // (pauses are the running service's settings).
  virtual Result<nlohmann::json> Pauses() = 0;
  virtual Result<nlohmann::json> Pause(const nlohmann::json& scope) = 0;
  virtual Result<nlohmann::json> Resume(const std::string& id) = 0;
  // "http://127.0.0.1:8686" or "store ./var/data": for messages.
  virtual std::string Describe() const = 0;
};

// The service at `server` through libcurl; `cacert` as HttpCall takes it.
std::unique_ptr<Backend> NewServiceBackend(const ServerUrl& server, const std::string& token,
                                           const std::string& cacert);

// How a command may use the store when no service answers.
enum class StoreAccess {
  kReadOnly,   // inspection: works while another process holds the store; writes nothing
  kExclusive,  // replay, cancel: takes the store's lock (Busy while it is held)
  kNone,       // service only (top)
};

// Opens the store at `data_dir`, read-only or exclusively (kNone is not an open mode).
// NotFound when there is no store there; Busy when kExclusive and another process holds it.
// An exclusive open re-queues deliveries a crashed service left in flight, as the service itself
// would on start; a read-only one shows them as they are. Backend write methods on a read-only
// store fail with FailedPrecondition.
Result<std::unique_ptr<Backend>> OpenStoreBackend(const std::string& data_dir, StoreAccess access);

}  // namespace egress::cli
