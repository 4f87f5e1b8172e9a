#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "adapters/adapter_registry.h"
#include "adapters/credential_refs.h"
#include "adapters/curl_transport.h"
#include "adapters/dynamodb_budget_backend.h"
#include "adapters/dynamodb_client.h"
#include "adapters/dynamodb_learned_budgets.h"
#include "adapters/dynamodb_shared_settings.h"
#include "adapters/redis_budget_backend.h"
#include "adapters/redis_connection.h"
#include "adapters/redis_invalid_requests.h"
#include "adapters/redis_learned_budgets.h"
#include "adapters/redis_shared_settings.h"
#include "adapters/request_timeouts.h"
#include "adapters/shared_settings.h"
#include "dispatcher/base/random.h"
#include "dispatcher/pacing/leased_budget_store.h"
#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "dispatcher/service/api/auth.h"
#include "dispatcher/service/api/auth_failure_limiter.h"
#include "dispatcher/service/api/delivery_fields.h"
#include "dispatcher/service/api/http_server.h"
#include "dispatcher/service/api/intake_limiter.h"
#include "dispatcher/service/api/tenant_request_slots.h"
#include "dispatcher/service/api_key_book.h"
#include "dispatcher/service/credential_book.h"
#include "dispatcher/service/delivery/delivery_loop.h"
#include "dispatcher/service/job_registry.h"
#include "dispatcher/service/metrics.h"
#include "dispatcher/service/pause_book.h"
#include "dispatcher/service/quota_book.h"
#include "dispatcher/service/quota_ledger.h"
#include "dispatcher/service/retention.h"
#include "dispatcher/service/settings_reloader.h"
#include "dispatcher/service/store_health_monitor.h"
#include "dispatcher/service/stored_settings.h"
#include "storage/pg_queue_store.h"
#include "storage/queue_store.h"

namespace egress::service {

// Budgets shared with other nodes through Redis or DynamoDB ([cluster], docs/deployment.md).
// Default: off, budgets in memory.
struct SharedBudgetOptions {
  bool enabled = false;
  // Redis: the meters (unless dynamodb is set), shared settings, learned limits and Discord's
  // invalid requests. Empty host: no Redis.
  adapters::RedisConnectionOptions redis;  // holds the Redis password: never log it
  // Set: the meters and parks live in this DynamoDB table instead (holds the AWS credentials:
  // never log it). Default: unset.
  std::optional<adapters::DynamoDbOptions> dynamodb;
  std::string key_prefix = "relay-egress:";
  // This node's name in logs. Default: empty ("<listen host>:<port>").
  std::string node_id;
  pacing::LeasedBudgetStoreOptions lease;
  // How often a node looks for settings other nodes shared (operator overrides). Default: 250 ms.
  Millis settings_poll{250};
};

// What the service is built from. Plain data; dispatcher/service/service_options_from_config.h
// fills it from a loaded config (relay-egress serve), tests fill it by hand. Holds secrets (admin
// token, credentials): never log it as a whole.
struct ServiceOptions {
  // The HTTP API: an already-parsed listen address (HostPort), connection caps, deadlines. Its
  // gate, when not set, is Admit (handlers.h): authentication on the header, the body limit
  // from `intake` (RequestBodyLimit).
  HttpServerOptions http;
  std::string admin_token;  // required by /api/admin; empty refuses every admin call
  // Where the key sealing secret settings comes from when store.secrets_key is unset
  // (storage::LoadOrCreateSecretsKey): server.secrets_key_file, RELAY_EGRESS_SECRETS_KEY, else
  // store.path/secrets.key, generated when missing. Default: empty, empty.
  std::string secrets_key_file;
  std::string secrets_key_env;
  // Who may call the API: tenants' API keys, server.auth, the brute-force budget.
  AuthOptions auth;
  storage::StoreOptions store;
  // The shared PostgreSQL store ([store] backend = "postgres"; docs/deployment.md): every node of
  // it must use the same secrets key, given by secrets_key_file or secrets_key_env (a key
  // generated per node would seal what no other node can open). Unset: the embedded RocksDB
  // store at store.path. Default: unset.
  std::optional<storage::PostgresStoreOptions> postgres;
  // With postgres: the nodes share the store's destinations by shard leases
  // (storage/pg_shard_leases.h; their node id is made by the service, unique per start, from
  // shared_budgets.node_id or the listen address). The ttl and renewal period of the leases
  // (tests shorten them). Default: 5 s and 1 s.
  Millis shard_lease_ttl{5000};
  Millis shard_lease_renew{1000};
  pacing::SchedulerOptions scheduler;
  std::vector<std::pair<pacing::BudgetName, pacing::Budget>> budget_defaults;
  adapters::PlatformEndpoints endpoints;
  // The profile platforms' definitions (config's [platforms.<p>] of each profile platform, with
  // its base_url): one ProfileAdapter each. Default: none.
  std::vector<adapters::ProfileSpec> profiles;
  // Each platform's connect and total timeout, set on every request of that platform. Default:
  // 5 s and 15 s for all.
  adapters::PlatformTimeouts timeouts;
  // Each platform's own trust store ([platforms.<p>] ca_file, ca_path), set on every request of
  // that platform; checked at start. Default: none (the transport's).
  adapters::PlatformTrust trust;
  adapters::TransportOptions transport;
  IntakeLimits intake;
  // The delivery loop's read-ahead, idle eviction and the like.
  DeliveryLoop::Options loop;
  // A tenant with this many unfinished deliveries gets 429 at intake. Default: 100,000.
  uint64_t backlog_watermark = 100'000;
  // A tenant whose delivery records take this many bytes in the store (QueueStore::
  // TenantStoredBytes), or would with the request's, gets 429 storage_quota_exceeded at intake
  // (server.tenant_max_stored_bytes); 0: no bound. Default: 0.
  uint64_t max_stored_bytes = 0;
  // Each tenant's own bound ([tenants.<t>] max_stored_bytes), over max_stored_bytes. Default:
  // none.
  std::map<std::string, uint64_t> tenant_max_stored_bytes;
  // Tenants' credentials from the config: (tenant, credential).
  std::vector<std::pair<std::string, adapters::Credential>> credentials;
  // The config credentials given by reference (token_file, secret_env, ...): read again by
  // ReloadCredentialRefs (SIGHUP).
  struct CredentialRefEntry {
    std::string tenant;
    adapters::Credential credential;  // as loaded; its token or secrets are replaced on reload
    adapters::CredentialRefs refs;
  };
  std::vector<CredentialRefEntry> credential_refs;
  std::vector<std::pair<std::string, uint32_t>> tenant_weights;
  SharedBudgetOptions shared_budgets;
  // [tenants.<t>] max_in_flight of the tenants that set one (pacing::Scheduler).
  std::vector<std::pair<std::string, int>> tenant_max_in_flight;
  // Threads for the API's blocking store calls (intake, reads, steering); several let
  // concurrent intakes share one fsync. The delivery loop has one thread of its own
  // (Service::loop_pool_). Default: 4.
  size_t storage_threads = 4;
  // How long finished work is kept and how often it is purged (its own thread).
  RetentionOptions retention;
  // Tiers, tenants' tiers and the config's quotas ([tiers], [tenants.<t>] tier and quotas).
  // A tier's budgets are its tenants' defaults, under their own overrides. Default: none.
  QuotaBook::Options quotas;
};

// The worker service: owns the store, the pacing engine, the transport, the delivery loop, the
// store's health monitor, the retention runner and the HTTP API, all driven by one loop thread
// (`io`) plus two pools for blocking store calls, the API's (storage_threads, which also runs the
// monitor's recoveries) and the delivery loop's single thread, the retention runner's own
// thread, and the render pool's one (GET /metrics' collected families, at a lower priority).
// Shutdown order: stop intake, let in-flight attempts finish, stop the loop's work,
// close the store. Construct, run and destroy on the thread running `io`.
class Service {
 public:
  // Opens the store (recovering in-flight work), binds the listener and starts pacing. Sends
  // through adapters::NewHttpTransport with options.transport: HTTP/2 over TLS on nghttp2,
  // everything else through libcurl.
  static Result<std::unique_ptr<Service>> Start(boost::asio::io_context& io, const Clock& clock,
                                                ServiceOptions options);
  // As above, sending every attempt through `transport` instead, which must run on `io` (tests
  // and the API fuzzer, which must never reach the network).
  static Result<std::unique_ptr<Service>> Start(boost::asio::io_context& io, const Clock& clock,
                                                ServiceOptions options,
                                                std::unique_ptr<adapters::HttpTransport> transport);
  ~Service();

  boost::asio::ip::tcp::endpoint endpoint() const { return server_->endpoint(); }
  // Stops intake, waits for in-flight attempts (at most `grace`), cancels the rest, closes the
  // store, then calls `done` on the loop.
  void Shutdown(Millis grace, std::function<void(Status)> done);

  // Pieces the API handlers use.
  storage::QueueStore& store() { return *store_; }
  boost::asio::thread_pool& storage_pool() { return *storage_pool_; }
  boost::asio::thread_pool& render_pool() { return *render_pool_; }
  // False once the service is being destroyed: what a pool posts back to the loop checks it, as
  // the loop may run on after the service is gone.
  std::weak_ptr<bool> alive() const { return alive_; }
  // The admin API's setting writes, on the storage pool one after another in the order the loop
  // posted them: the last setting stored is then the last one put in force (two PUTs posted to
  // the pool itself may be written in either order).
  boost::asio::strand<boost::asio::thread_pool::executor_type>& settings_writes() {
    return *settings_writes_;
  }
  // With the PostgreSQL store, puts in force what other nodes changed in the store's settings
  // (within about a second); every setting change of this node is bracketed by its
  // BeginLocalChange and EndLocalChange. Loop thread only.
  SettingsReloader& settings_reloader() { return *settings_reloader_; }
  DeliveryLoop& loop() { return *loop_; }
  pacing::Scheduler& scheduler() { return *scheduler_; }
  IntakeLimiter& intake_limiter() { return *intake_limiter_; }
  // Tiers and quotas (docs/costs.md); loop thread only.
  QuotaBook& quotas() { return *quotas_; }
  TenantRequestSlots& request_slots() { return request_slots_; }
  // The HTTP server's counters (connections open, refused, deadlines hit).
  const HttpServerStats& http_stats() const { return server_->stats(); }
  HttpServer& http_server() { return *server_; }
  // With [cluster]: the share of what responses taught; nullptr without.
  const pacing::LearnedShare* learned_share() const { return shared_learned_.get(); }
  CredentialBook& credentials() { return credentials_; }
  // Tenants' API keys (config, then the persisted api_keys/ settings); loop thread only.
  ApiKeyBook& api_keys() { return api_keys_; }
  AuthFailureLimiter& auth_failures() { return *auth_failures_; }
  // SHA-256 of the admin token; empty when there is none.
  const std::string& admin_token_digest() const { return admin_token_digest_; }
  // Background jobs (bulk replay); loop thread only.
  JobRegistry& jobs() { return jobs_; }
  // Listings of GET /v1/destinations between their page and their store read (at most
  // kMaxListings at once; the rest are 429); loop thread only.
  static constexpr int kMaxListings = 4;
  int& listings_in_flight() { return listings_in_flight_; }
  // GET /metrics' text, served to every scrape for `kept` after it was made (MetricsTextKept;
  // api/metrics_scrape.cc); loop only.
  struct MetricsText {
    std::optional<SteadyTime> made;  // when `text`'s making began (its values are of then on)
    SteadyTime begun;                // when the text being made began
    std::shared_ptr<const std::string> text;     // shared by the answers that send it
    std::shared_ptr<const std::string> gzipped;  // `text` as gzip, once a scrape asked for it
    std::chrono::nanoseconds kept{std::chrono::seconds(1)};  // how long `text` is served
    std::chrono::nanoseconds cpu{0};  // what `text` took to make (and its gzip, once made)
    bool making = false;              // a text is being gathered and written
    struct Waiting {
      Respond respond;
      bool gzip = false;  // it accepts gzip
    };
    std::vector<Waiting> waiting;  // scrapes that wait for the text being made
    bool gzipping = false;         // a text is being made gzip on the render pool
    struct GzipWaiting {
      Respond respond;
      std::shared_ptr<const std::string> text;  // the kept text when it came
      SteadyTime made;                          // that text's
    };
    std::vector<GzipWaiting> gzip_waiting;  // scrapes that accept gzip and wait for it
    int64_t tat_ns = 0;                     // the scrapes' GCRA meter (kMetricsBytesPerSecond)
    size_t last_bytes = 0;                  // the size of the last text made
    // The store's backlog by (tenant, platform) last read: the depths shown when a read fails.
    std::shared_ptr<const std::vector<storage::GroupCounts>> last_groups;
  };
  // The bytes of /metrics text answered a second: a scrape costs the size of the last text made,
  // the rest are 429 with Retry-After. Each scrape is written the text (9.5 MB at 10,000
  // tenants) from the loop, and a client scraping back to back took 78 a second and the loop
  // with them (bench/README.md, section 12; each took a copy then, now they share one). 32 MiB a
  // second is 3.5 scrapes a second at 10,000 tenants, hundreds with a few; Prometheus scrapes a
  // target once per interval (15 s by default), twice with an HA pair.
  static constexpr size_t kMetricsBytesPerSecond = 32 << 20;
  // How long a text that took `cpu` of the service's threads to make is served: a hundred times
  // that, from 1 s to 10 s. However often /metrics is asked, making its text takes at most ~1%
  // of a core (up to 100 ms a text; past that, the 10 s bound holds the text's age instead). At
  // 10,000 tenants a text (9.5 MB) takes 24-47 ms, and made once a second it put another tenant's
  // webhooks' p99 at 3-5x the idle one (bench/README.md, section 12); a text of a few tenants takes
  // well under 10 ms and is made at most once a second, as before. A lone scraper at Prometheus's
  // usual 15 s gets a text made for it; the Age header tells how old an answer's text is.
  static std::chrono::nanoseconds MetricsTextKept(std::chrono::nanoseconds cpu) {
    return std::clamp<std::chrono::nanoseconds>(cpu * 100, std::chrono::seconds(1),
                                                std::chrono::seconds(10));
  }
  MetricsText& metrics_text() { return metrics_text_; }
  StoreHealthMonitor& store_health() { return *store_health_; }
  Metrics& metrics() { return metrics_; }
  // The outbound transport (its counters for /metrics).
  const adapters::HttpTransport& transport() const { return *transport_; }
  const adapters::AdapterRegistry& adapters() const { return *adapters_; }
  const ServiceOptions& options() const { return options_; }
  const Clock& clock() const { return clock_; }
  boost::asio::io_context& io() { return io_; }
  bool accepting() const { return accepting_; }

  // With [cluster]: stores a tenant's overrides (RateLimitsToJson text, "" for none) in Redis,
  // from where every node applies them within settings_poll; without, does nothing.
  // Fire and forget (a failure is logged). Runs on the loop.
  void ShareTenantOverrides(const std::string& tenant, const std::string& text);
  // The operator's pauses in force (docs/api.md, "Pauses"); loop thread.
  const PauseBook& pauses() const { return pauses_; }
  // Puts a stored pause in force (`pause` added or replaced by id) or ends one (`id`; false
  // when none has it), here only: the delivery loop holds or lets go of the destinations in its
  // next turn (PausesChanged). No limit here: the API holds new pauses to PauseBook::kMaxPauses,
  // and what another node stored is put in force whatever the count. Loop thread.
  void PutPause(Pause pause);
  bool RemovePause(const std::string& id);
  // With [cluster]: stores the pause's setting (PauseToJson text, "" when it ended) in Redis,
  // from where every node applies it within settings_poll; without, does nothing. Fire and
  // forget (a failure is logged). Runs on the loop.
  void SharePause(const std::string& id, const std::string& text);
  // Replaces a tenant's shadow limits (metered, counted, never enforced: docs/api.md, "Shadow
  // limits"; all at once, empty clears them). InvalidArgument for an invalid budget.
  Status SetTenantShadowLimits(const std::string& tenant, const BudgetOverrides& shadow);
  const BudgetOverrides& ShadowLimits(const std::string& tenant) const;
  // Replaces a tenant's operator overrides (all budgets at once; empty clears them).
  Status SetTenantOverrides(
      const std::string& tenant,
      const std::vector<std::pair<pacing::BudgetName, pacing::Budget>>& overrides);
  // Reads every credential reference of the config again (SIGHUP) on the storage pool and
  // swaps the new values in at once; when any reference fails, nothing changes and
  // `credential_reload_failed` names the reference (never a value). `done` gets the outcome, on
  // the storage pool.
  void ReloadCredentialRefs(std::function<void(Status)> done);
  // The budgets' deployment defaults, as ServiceOptions::budget_defaults.
  using BudgetDefaults = std::vector<std::pair<pacing::BudgetName, pacing::Budget>>;
  // Reads the budgets' defaults again (SIGHUP): calls `load` on the storage pool (it may read
  // files), then on the loop applies them at once to the scheduler (every tenant without an
  // override, live meters re-paced), to intake and to EffectiveBudget. When `load` fails or a
  // budget is invalid nothing changes and `budget_reload_failed` is logged with the error. `done`
  // gets the outcome, on the loop. Captures `this`: Service joins the loop before it goes.
  void ReloadBudgets(std::function<Result<BudgetDefaults>()> load,
                     std::function<void(Status)> done);

  // The budget in force for the tenant, and whether an override set it: the tenant's own
  // override, else its tier's budget, else the deployment default.
  std::pair<pacing::Budget, bool> EffectiveBudget(const std::string& tenant,
                                                  pacing::BudgetName name) const;
  // The budget the tenant's tier sets for `name`, if any.
  std::optional<pacing::Budget> TierBudget(const std::string& tenant,
                                           pacing::BudgetName name) const;

 private:
  Service(boost::asio::io_context& io, const Clock& clock, ServiceOptions options);
  // Reads the settings persisted in the store and puts them in force (ApplySettings), at start.
  // Returns their version (StoredSettings::version).
  Result<uint64_t> LoadSettings();
  // Puts `stored` in force in place of the settings read before (at start, or the reload of a
  // shared store's, SettingsReloader), as a restart would: the API keys are the config's with
  // each stored tenant's list over its tenant's; the overrides and quotas are the stored ones,
  // and a tenant whose stored ones are gone goes back to its tier's and the config's (as a PUT
  // of {} does on the node that takes it); the registered credentials are the stored ones (the
  // config's stay). InvalidArgument when a key is the admin token's, Corruption when two tenants
  // share a key: nothing changes then. Loop thread.
  Status ApplySettings(const StoredSettings& stored);
  // The admin token's digest; then the config's API keys into the book (errors name the tenant).
  Status LoadApiKeys();
  // The config's API keys, by tenant.
  std::map<std::string, std::vector<std::string>> ConfigApiKeys() const;
  // Connects to Redis (in the background) and returns the store the Scheduler asks.
  pacing::BudgetStore* StartSharedBudgets();
  // A setting another node shared (ShareTenantOverrides, SharePause): stored, then in force,
  // unless it is what this node holds already. Runs on the loop.
  void OnSharedSetting(const std::string& name, const std::string& text);
  void OnSharedPause(const std::string& name, const std::string& text);
  // With [cluster]: stores the setting `name` in the shared store (Redis or DynamoDB) for every
  // node (SharedSettings::Put);
  // a failure is logged (shared_setting_failed). Without, does nothing.
  void ShareSetting(const std::string& name, const std::string& text);
  // After pauses_ changed: relay_egress_pauses, and one DeliveryLoop::PausesChanged posted for
  // every change of this turn.
  void PausesChanged();

  boost::asio::io_context& io_;
  const Clock& clock_;
  const ServiceOptions options_;
  Metrics metrics_;
  CredentialBook credentials_;
  ApiKeyBook api_keys_;
  std::string admin_token_digest_;
  std::unique_ptr<AuthFailureLimiter> auth_failures_;
  JobRegistry jobs_;
  int listings_in_flight_ = 0;
  MetricsText metrics_text_;
  // Set false by the destructor: what the store's shard leases post to the loop checks it.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<storage::QueueStore> store_;
  std::unique_ptr<boost::asio::thread_pool> storage_pool_;
  std::optional<boost::asio::strand<boost::asio::thread_pool::executor_type>> settings_writes_;
  // The delivery loop's store calls (reads ahead, leases, outcomes), one after another on one
  // thread: the loop posts many small jobs, and one thread that is still busy takes the next
  // without being woken. On the API's pool each job woke a thread (a futex wake and a context
  // switch): see bench/README.md, "one store thread for the loop".
  std::unique_ptr<boost::asio::thread_pool> loop_pool_;
  // GET /metrics writes the families it collects here, one text at a time, off the loop
  // (api/metrics_scrape.cc); the thread runs at a lower priority than the loop.
  std::unique_ptr<boost::asio::thread_pool> render_pool_;
  pacing::MemoryBudgetStore budget_store_;
  // With shared budgets: the Redis connection, the scripts over it, or DynamoDB's client and
  // backend, and the leases the Scheduler asks (declared in that order: each borrows the one
  // before).
  std::unique_ptr<adapters::RedisConnection> redis_;
  std::unique_ptr<adapters::RedisBudgetBackend> redis_budgets_;
  std::unique_ptr<adapters::HttpTransport> dynamo_transport_;
  std::unique_ptr<SplitMixRandom> dynamo_random_;
  std::unique_ptr<adapters::DynamoDbClient> dynamo_;
  std::unique_ptr<adapters::DynamoBudgetBackend> dynamo_budgets_;
  std::unique_ptr<pacing::LeasedBudgetStore> leased_budgets_;
  std::unique_ptr<adapters::SharedSettings> shared_settings_;
  std::unique_ptr<adapters::RedisInvalidRequests> shared_invalid_;  // Discord's, per token
  std::unique_ptr<pacing::LearnedShare> shared_learned_;            // what responses taught
  SplitMixRandom random_;
  std::unique_ptr<pacing::Scheduler> scheduler_;
  std::unique_ptr<adapters::HttpTransport> transport_;
  std::unique_ptr<adapters::AdapterRegistry> adapters_;
  std::unique_ptr<adapters::TimedAdapters> timed_adapters_;  // adapters_ with the timeouts
  std::unique_ptr<DeliveryLoop> loop_;
  std::unique_ptr<RetentionRunner> retention_;
  std::unique_ptr<StoreHealthMonitor> store_health_;     // tells loop_ whether the store writes
  std::unique_ptr<SettingsReloader> settings_reloader_;  // started with the PostgreSQL store only
  std::unique_ptr<IntakeLimiter> intake_limiter_;
  std::unique_ptr<StoreQuotaLedger> quota_ledger_;
  std::unique_ptr<QuotaBook> quotas_;
  TenantRequestSlots request_slots_;
  std::unique_ptr<HttpServer> server_;
  bool accepting_ = true;
  std::map<std::string, std::vector<std::pair<pacing::BudgetName, pacing::Budget>>> overrides_;
  std::map<std::string, BudgetOverrides> shadow_;  // by tenant; loop thread only
  PauseBook pauses_;
  bool pauses_pass_posted_ = false;
  // options_.budget_defaults, then what ReloadBudgets applied; loop thread only.
  BudgetDefaults budget_defaults_;
};

}  // namespace egress::service
