#include "dispatcher/service/service.h"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <set>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "adapters/api_key.h"
#include "adapters/h2_transport.h"
#include "adapters/trust_files.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/intake.h"
#include "dispatcher/service/event_log.h"
#include "dispatcher/service/tenant_settings.h"
#include "storage/rocks_queue_store.h"

namespace egress::service {

namespace asio = boost::asio;

namespace {

// How long a PostgreSQL store's outcome writes wait for more outcomes (DeliveryLoop::Options):
// in the three-node throughput run, 5 ms took delivery from 4.0-4.1k/s to 5.5-6.0k/s and the
// server's CPU from 6.6-6.9 s to 4.2-4.7 s; 10 and 20 ms gained nothing more.
constexpr int kPostgresOutcomeLingerMs = 5;

// `endpoints` with the API's own address refused by every customer-URL policy, the global one
// and each tenant's (docs/security.md, "SSRF guard and network policy").
adapters::PlatformEndpoints WithOwnAddressRefused(adapters::PlatformEndpoints endpoints,
                                                  const asio::ip::tcp::endpoint& listen) {
  const asio::ip::address a = listen.address();
  Result<adapters::IpAddress> ip = adapters::IpAddress::Parse(a.to_string());
  if (!ip) {
    return endpoints;  // an address Asio printed is always a literal
  }
  const adapters::RefusedEndpoint own{*ip, listen.port()};
  endpoints.webhook_ssrf.refused_endpoints.push_back(own);
  for (auto& [tenant, policy] : endpoints.tenant_webhook_ssrf) {
    policy.refused_endpoints.push_back(own);
  }
  return endpoints;
}

}  // namespace

Service::Service(asio::io_context& io, const Clock& clock, ServiceOptions options)
    : io_(io),
      clock_(clock),
      options_(std::move(options)),
      random_(std::random_device{}()),
      request_slots_(options_.intake.max_requests_in_flight),
      budget_defaults_(options_.budget_defaults) {}

Result<std::unique_ptr<Service>> Service::Start(asio::io_context& io, const Clock& clock,
                                                ServiceOptions options) {
  auto transport = adapters::NewHttpTransport(io, clock, options.transport);
  return Start(io, clock, std::move(options), std::move(transport));
}

Result<std::unique_ptr<Service>> Service::Start(
    asio::io_context& io, const Clock& clock, ServiceOptions options,
    std::unique_ptr<adapters::HttpTransport> transport) {
  std::unique_ptr<Service> s(new Service(io, clock, std::move(options)));
  const ServiceOptions& o = s->options_;
  if (Status trust = adapters::CheckTrustFiles(o.transport); !trust.ok()) {
    return trust;
  }
  for (int i = 0; i < PlatformCount(); ++i) {
    const adapters::RequestTrust& own = o.trust[i];
    const std::string section =
        "platforms." + std::string(PlatformString(static_cast<Platform>(i)));
    if (Status trust = adapters::CheckTrustFiles(section, own.ca_file, own.ca_path); !trust.ok()) {
      return trust;
    }
  }
  storage::StoreOptions store_options = o.store;
  if (o.postgres && !store_options.secrets_key && o.secrets_key_file.empty() &&
      o.secrets_key_env.empty()) {
    return Status::InvalidArgument(
        "store.backend postgres: every node of the store must seal and open secrets with the same "
        "key: set server.secrets_key_file or RELAY_EGRESS_SECRETS_KEY (a key generated per node "
        "would seal what no other node can open)");
  }
  if (!store_options.secrets_key) {
    auto key = storage::LoadOrCreateSecretsKey(o.secrets_key_file, o.secrets_key_env, o.store.path);
    if (!key) {
      return key.error();
    }
    if (key->source == storage::SecretsKeySource::kGenerated) {
      LogEvent(LogLevel::kWarn, "secrets_key_generated",
               {{"path", key->path}, {"note", "keep a copy with the store's backups"}});
    }
    store_options.secrets_key = key->key;
  }
  std::optional<storage::PostgresStoreOptions> postgres = o.postgres;
  if (postgres) {
    // Every node serves the shards it holds a lease on. The id is unique per start: two
    // processes under one name would both think they own a shard.
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    const std::string base = !o.shared_budgets.node_id.empty()
                                 ? o.shared_budgets.node_id
                                 : fmt::format("{}:{}", o.http.listen.host, o.http.listen.port);
    postgres->shard_leases = storage::ShardLeaseOptions{
        .node_id = fmt::format("{}@{}/{}/{:08x}", base.substr(0, 128), host, ::getpid(),
                               static_cast<uint32_t>(std::random_device{}())),
        .ttl = o.shard_lease_ttl,
        .renew_every = o.shard_lease_renew,
        .margin = o.shard_lease_renew,
    };
    postgres->clock = &clock;
  }
  auto store =
      postgres
          ? storage::OpenPostgresQueueStore(*postgres, store_options, ToUnixMillis(clock.WallNow()))
          : storage::OpenRocksQueueStore(store_options, ToUnixMillis(clock.WallNow()));
  if (!store) {
    return store.error();
  }
  s->store_ = std::move(*store);
  s->storage_pool_ = std::make_unique<asio::thread_pool>(std::max<size_t>(1, o.storage_threads));
  s->settings_writes_.emplace(asio::make_strand(s->storage_pool_->get_executor()));
  s->loop_pool_ = std::make_unique<asio::thread_pool>(1);
  s->render_pool_ = std::make_unique<asio::thread_pool>(1);
  pacing::BudgetStore* budgets = &s->budget_store_;
  s->metrics_.Set(GaugeId::kBudgetStoreUp, {}, 1);
  if (o.shared_budgets.enabled) {
    budgets = s->StartSharedBudgets();
  }
  // The transport's connections are the Scheduler's to hand out: it sends only what fits.
  pacing::SchedulerOptions scheduler = o.scheduler;
  scheduler.connections = {.per_origin = o.transport.max_host_connections,
                           .total = o.transport.max_total_connections,
                           .streams = o.transport.max_concurrent_streams,
                           // As many leased ahead as the origin has connections: a freed one
                           // goes to a request already leased (bench/README.md, section 8).
                           .ahead = o.transport.max_host_connections};
  // Shared budgets: Discord's global is the shared meter alone. The sliding window counts this
  // node's sends only, so N nodes would spend a token's 50/s N times (docs/pacing.md).
  if (o.shared_budgets.enabled) {
    scheduler.discord_global_window = false;
  }
  s->scheduler_ = std::make_unique<pacing::Scheduler>(clock, *budgets, s->random_, scheduler);
  for (const auto& [name, budget] : o.budget_defaults) {
    if (Status st = s->scheduler_->SetDefaultBudget(name, budget); !st.ok()) {
      return st;
    }
  }
  for (const auto& [tenant, weight] : o.tenant_weights) {
    if (Status st = s->scheduler_->SetTenantWeight(tenant, weight); !st.ok()) {
      return st;
    }
  }
  for (const auto& [tenant, cap] : o.tenant_max_in_flight) {
    if (Status st = s->scheduler_->SetTenantMaxInFlight(tenant, cap); !st.ok()) {
      return st;
    }
  }
  for (const auto& [tenant, credential] : o.credentials) {
    s->credentials_.Put(tenant, credential);
  }
  pacing::Budget intake = pacing::DefaultBudget(pacing::BudgetName::kTenantIntake);
  for (const auto& [name, budget] : o.budget_defaults) {
    if (name == pacing::BudgetName::kTenantIntake) {
      intake = budget;
    }
  }
  s->intake_limiter_ = std::make_unique<IntakeLimiter>(clock, intake);
  s->quota_ledger_ = std::make_unique<StoreQuotaLedger>(*s->store_);
  s->quotas_ = std::make_unique<QuotaBook>(clock, *s->quota_ledger_, o.quotas);
  // A tier's budgets are its tenants' own defaults (their overrides, loaded next, go over them).
  for (const auto& [tenant, tier] : o.quotas.tenant_tiers) {
    if (auto t = o.quotas.tiers.find(tier);
        t != o.quotas.tiers.end() && !t->second.budgets.empty()) {
      if (Status st = s->SetTenantOverrides(tenant, {}); !st.ok()) {
        return st;
      }
    }
  }
  s->auth_failures_ = std::make_unique<AuthFailureLimiter>(clock, o.auth.failure_budget,
                                                           o.auth.max_failure_sources);
  if (Status st = s->LoadApiKeys(); !st.ok()) {
    return st;
  }
  s->settings_reloader_ = std::make_unique<SettingsReloader>(
      io, s->storage_pool_->get_executor(), *s->store_,
      [self = s.get()](const StoredSettings& stored) { return self->ApplySettings(stored); },
      SettingsReloader::Options{});
  Result<uint64_t> settings_version = s->LoadSettings();
  if (!settings_version) {
    return settings_version.error();
  }
  s->PausesChanged();
  if (s->shared_settings_) {
    s->shared_settings_->Start();  // after the local settings: the shared ones go over them
    // What other nodes' responses taught (docs/pacing.md, "Shared learning"). The instance id
    // is unique per start, so a node never applies its own updates again.
    const std::string instance =
        fmt::format("{}/{:x}{:x}", o.shared_budgets.node_id, static_cast<uint64_t>(::getpid()),
                    static_cast<uint64_t>(clock.WallNow().time_since_epoch().count()));
    auto apply = [self = s.get()](const pacing::LearnedUpdate& update, Millis age) {
      // A refused update (hostile or out of range) changes nothing; the node paces as it would
      // without the share.
      self->scheduler_->ApplyLearned(update, age).IgnoreError();
    };
    if (s->dynamo_) {
      auto learned = std::make_unique<adapters::DynamoDbLearnedBudgets>(
          io, *s->dynamo_, clock, o.shared_budgets.key_prefix, instance,
          o.shared_budgets.settings_poll, apply);
      learned->Start();
      s->shared_learned_ = std::move(learned);
    } else {
      auto learned = std::make_unique<adapters::RedisLearnedBudgets>(
          io, *s->redis_, o.shared_budgets.key_prefix, instance, o.shared_budgets.settings_poll,
          apply);
      learned->Start();
      s->shared_learned_ = std::move(learned);
    }
    s->scheduler_->SetLearnedShare(s->shared_learned_.get());
  }
  s->transport_ = std::move(transport);
  Service* self = s.get();
  // Bound before the adapters exist, so that every tenant's SSRF policy refuses the API's own
  // address (port 0 is only known now). No request is served before Start returns: the handlers
  // run on `io`, which runs this.
  HttpServerOptions http = o.http;
  if (!http.gate) {
    http.gate = [self](const HttpRequestHeader& header, const boost::asio::ip::address& peer) {
      return Admit(*self, header, peer);
    };
  }
  auto server = HttpServer::Start(
      io, http, [self](HttpRequest&& req, const Admission& admission, Respond respond) {
        Route(*self, std::move(req), admission, std::move(respond));
      });
  if (!server) {
    return server.error();
  }
  // Where it really listens, after name resolution: an open API only on loopback.
  if (!o.auth.required && !(*server)->endpoint().address().is_loopback()) {
    return Status::InvalidArgument(
        "server.auth = \"off\" needs a loopback listen address: anyone who reaches " +
        (*server)->endpoint().address().to_string() + " could act as any tenant");
  }
  s->server_ = std::move(*server);
  s->adapters_ = std::make_unique<adapters::AdapterRegistry>(
      WithOwnAddressRefused(o.endpoints, s->endpoint()), o.profiles);
  s->timed_adapters_ =
      std::make_unique<adapters::TimedAdapters>(*s->adapters_, o.timeouts, o.trust);
  const adapters::TimedAdapters* timed = s->timed_adapters_.get();
  DeliveryLoop::Options loop = o.loop;
  if (o.postgres && loop.outcome_linger.count() == 0) {
    // A transaction's fixed cost (statements, commit) dwarfs its rows': outcomes go in fewer,
    // larger ones (bench/README.md, section 13).
    loop.outcome_linger = Millis(kPostgresOutcomeLingerMs);
    loop.outcome_linger_batch = 64;
  }
  loop.base_urls[static_cast<size_t>(Platform::kSlack)] = o.endpoints.slack_base_url;
  loop.base_urls[static_cast<size_t>(Platform::kDiscord)] = o.endpoints.discord_base_url;
  loop.base_urls[static_cast<size_t>(Platform::kLine)] = o.endpoints.line_base_url;
  for (const adapters::ProfileSpec& profile : o.profiles) {
    loop.base_urls[PlatformIndex(profile.platform)] = profile.base_url;
  }
  s->loop_ = std::make_unique<DeliveryLoop>(
      io, s->loop_pool_->get_executor(), *s->store_, *s->scheduler_, *s->transport_,
      [timed](std::string_view p) { return timed->Find(p); }, s->credentials_, clock, s->metrics_,
      std::move(loop));
  if (s->redis_) {
    s->shared_invalid_ = std::make_unique<adapters::RedisInvalidRequests>(
        *s->redis_, o.shared_budgets.key_prefix, o.loop.discord_invalid_requests.window);
    s->loop_->ShareDiscordInvalidRequests(s->shared_invalid_.get());
  }
  s->store_health_ = std::make_unique<StoreHealthMonitor>(
      io, s->storage_pool_->get_executor(), *s->store_, s->metrics_,
      [self](bool healthy) { self->loop_->SetStoreWritable(healthy); },
      StoreHealthMonitor::Options{});
  if (storage::ShardOwnership* shards = s->store_->ownership()) {
    // The leases' threads tell the loop; what they post runs only while the service lives.
    shards->SetOwnershipObserver([self, alive = std::weak_ptr<bool>(s->alive_)] {
      asio::post(self->io_, [self, alive] {
        if (auto a = alive.lock(); a && *a) {
          self->metrics_.Set(GaugeId::kStoreShardsHeld, {},
                             static_cast<double>(self->store_->ownership()->held_count()));
          self->loop_->OwnershipChanged();
        }
      });
    });
    shards->SetWakeObserver(
        [self, alive = std::weak_ptr<bool>(s->alive_)](std::vector<std::string> ids) {
          asio::post(self->io_, [self, alive, ids = std::move(ids)]() mutable {
            if (auto a = alive.lock(); a && *a) {
              self->loop_->Wake(std::move(ids));
            }
          });
        });
    s->metrics_.Set(GaugeId::kStoreShardsHeld, {}, static_cast<double>(shards->held_count()));
  }
  s->loop_->SetPauses(&s->pauses_);
  s->loop_->Start();
  s->store_health_->Start();
  if (o.postgres) {
    // Other nodes change the settings too: what they store is put in force here.
    s->settings_reloader_->Start(*settings_version);
  }
  s->retention_ =
      std::make_unique<RetentionRunner>(io, *s->store_, clock, s->metrics_, o.retention);
  s->retention_->Start();
  return s;
}

pacing::BudgetStore* Service::StartSharedBudgets() {
  const SharedBudgetOptions& shared = options_.shared_budgets;
  pacing::SharedBudgetBackend* backend = nullptr;
  std::string store = "redis";
  if (!shared.redis.host.empty()) {
    redis_ = std::make_unique<adapters::RedisConnection>(io_, clock_, shared.redis);
  }
  if (shared.dynamodb) {
    store = "dynamodb";
    dynamo_transport_ = adapters::NewCurlTransport(io_, clock_, adapters::TransportOptions{});
    dynamo_random_ = std::make_unique<SplitMixRandom>(
        static_cast<uint64_t>(clock_.WallNow().time_since_epoch().count()) ^ 0x5eed);
    dynamo_ = std::make_unique<adapters::DynamoDbClient>(io_, clock_, *dynamo_transport_,
                                                         *dynamo_random_, *shared.dynamodb);
    dynamo_budgets_ =
        std::make_unique<adapters::DynamoBudgetBackend>(*dynamo_, clock_, shared.key_prefix);
    backend = dynamo_budgets_.get();
  } else {
    redis_budgets_ = std::make_unique<adapters::RedisBudgetBackend>(*redis_, shared.key_prefix);
    backend = redis_budgets_.get();
  }
  leased_budgets_ = std::make_unique<pacing::LeasedBudgetStore>(clock_, *backend, shared.lease);
  const std::string mode =
      shared.lease.down_mode == pacing::BackendDownMode::kHold ? "hold" : "local_share";
  // Down until the first connection is made: local_share or hold applies until then.
  metrics_.Set(GaugeId::kBudgetStoreUp, {}, 0);
  auto observer = [this, mode, store](bool up, const std::string& why) {
    metrics_.Set(GaugeId::kBudgetStoreUp, {}, up ? 1 : 0);
    if (up) {
      LogEvent(LogLevel::kInfo, "budget_store_up",
               {{"store", store}, {"node", options_.shared_budgets.node_id}});
    } else {
      LogEvent(LogLevel::kWarn, "budget_store_down",
               {{"store", store},
                {"node", options_.shared_budgets.node_id},
                {"reason", why},
                {"mode", mode}});
    }
  };
  if (dynamo_) {
    dynamo_->SetStateObserver(observer);
    dynamo_->Start();
  } else {
    redis_->SetStateObserver(observer);
  }
  // Settings and what responses taught go through the store of the budgets: with DynamoDB they
  // reach every region the table serves; a Redis beside it keeps only the count of Discord's
  // invalid requests (one egress address's).
  auto changed = [this](const std::string& name, const std::string& text) {
    OnSharedSetting(name, text);
  };
  if (dynamo_) {
    shared_settings_ = std::make_unique<adapters::DynamoDbSharedSettings>(
        io_, *dynamo_, clock_, shared.key_prefix, shared.settings_poll, changed);
  } else if (redis_) {
    shared_settings_ = std::make_unique<adapters::RedisSharedSettings>(
        io_, *redis_, shared.key_prefix, shared.settings_poll, changed);
  }
  if (redis_) {
    redis_->Start();
  }
  return leased_budgets_.get();
}

void Service::ShareSetting(const std::string& name, const std::string& text) {
  if (!shared_settings_) {
    return;
  }
  shared_settings_->Put(name, text, [name](Status st) {
    if (!st.ok()) {
      // Tried again at every poll until the store takes it (SharedSettings::Put).
      LogEvent(LogLevel::kWarn, "shared_setting_failed",
               {{"setting", name}, {"reason", st.message()}});
    }
  });
}

void Service::ShareTenantOverrides(const std::string& tenant, const std::string& text) {
  ShareSetting(OverridesKey(tenant), text);
}

void Service::OnSharedSetting(const std::string& name, const std::string& text) {
  if (name.starts_with(kPausesPrefix)) {
    OnSharedPause(name, text);
    return;
  }
  const std::string prefix = OverridesKey("");
  if (!name.starts_with(prefix)) {
    return;  // a setting of a newer version: not ours to apply
  }
  const std::string tenant = name.substr(prefix.size());
  RateLimitSettings parsed;
  if (!text.empty()) {
    auto json = nlohmann::json::parse(text, nullptr, false);
    auto limits = ParseRateLimitSettings(json.is_discarded() ? nlohmann::json(nullptr) : json);
    if (!limits) {
      LogEvent(
          LogLevel::kWarn, "shared_setting_rejected",
          {{"tenant", tenant}, {"setting", "rate_limits"}, {"reason", limits.error().message}});
      return;
    }
    parsed = std::move(*limits);
  }
  auto held = overrides_.find(tenant);
  auto held_shadow = shadow_.find(tenant);
  if (SameOverrides(held == overrides_.end() ? BudgetOverrides() : held->second, parsed.enforced) &&
      SameOverrides(held_shadow == shadow_.end() ? BudgetOverrides() : held_shadow->second,
                    parsed.shadow)) {
    return;  // what this node holds (its own PUT, or one it applied already)
  }
  settings_reloader_->BeginLocalChange();
  asio::post(*settings_writes_, [this, tenant, text, parsed = std::move(parsed)]() mutable {
    // A store every node shares holds it already (the node that took the PUT stored it first);
    // writing it again could put an older value over one another node stored since.
    Status stored =
        options_.postgres ? Status::Ok() : store_->PutSetting(OverridesKey(tenant), text);
    asio::post(io_, [this, tenant, stored, parsed = std::move(parsed)]() {
      settings_reloader_->EndLocalChange();
      if (!stored.ok()) {
        LogEvent(LogLevel::kWarn, "shared_setting_failed",
                 {{"tenant", tenant}, {"setting", "rate_limits"}, {"reason", stored.message()}});
        return;
      }
      // The node that took the PUT rescaled the shared meters already: only this node's side.
      if (leased_budgets_) {
        leased_budgets_->set_share_writes(false);
      }
      Status st = SetTenantOverrides(tenant, parsed.enforced);
      if (leased_budgets_) {
        leased_budgets_->set_share_writes(true);
      }
      if (st.ok()) {
        st = SetTenantShadowLimits(tenant, parsed.shadow);
      }
      if (!st.ok()) {
        LogEvent(LogLevel::kWarn, "shared_setting_failed",
                 {{"tenant", tenant}, {"setting", "rate_limits"}, {"reason", st.message()}});
        return;
      }
      LogEvent(
          LogLevel::kInfo, "rate_limits_replaced",
          {{"tenant", tenant}, {"rate_limits", RateLimitsToJson(parsed)}, {"source", "cluster"}});
    });
  });
}

Service::~Service() {
  *alive_ = false;
  if (store_ && store_->ownership() != nullptr) {
    store_->ownership()->SetOwnershipObserver(nullptr);
    store_->ownership()->SetWakeObserver(nullptr);
  }
  if (server_) {
    server_->StopAccepting();
  }
  if (store_health_) {
    store_health_->Stop();
  }
  retention_.reset();  // waits for a running slice
  for (auto* pool : {storage_pool_.get(), loop_pool_.get(), render_pool_.get()}) {
    if (pool != nullptr) {
      pool->join();
    }
  }
  store_health_.reset();
  loop_.reset();
  transport_.reset();
  if (store_) {
    // Nowhere to report at this point; Shutdown() reports a failed close.
    store_->Close().IgnoreError();
  }
}

void Service::Shutdown(Millis grace, std::function<void(Status)> done) {
  accepting_ = false;
  server_->StopAccepting();
  store_health_->Stop();
  settings_reloader_->Stop();
  auto finished = std::make_shared<bool>(false);
  auto timer = std::make_shared<asio::steady_timer>(io_, grace);
  auto finish = [this, finished, timer, done = std::move(done)] {
    if (*finished) {
      return;
    }
    *finished = true;
    timer->cancel();
    transport_->CancelAll();
    retention_->Stop();  // waits for a running slice
    storage_pool_->join();
    loop_pool_->join();
    render_pool_->join();
    done(store_->Close());
  };
  timer->async_wait([finish](const boost::system::error_code& ec) {
    if (!ec) {
      finish();  // grace over: in-flight attempts are cancelled, recovery redoes them
    }
  });
  loop_->Drain(finish);
}

Status Service::LoadApiKeys() {
  if (!options_.admin_token.empty()) {
    // As a tenant key: 16 to 256 visible ASCII bytes, or "sha256:" and its digest's hex, so
    // that a short token cannot be guessed and the config need not hold the token itself. A
    // shorter one of visible ASCII still starts the service, with a warning at every start: a
    // deployment whose token predates the rule keeps sending after an upgrade (refusing to start
    // would stop every delivery), and guesses are slowed by the auth-failure limit.
    const std::string_view token = options_.admin_token;
    Result<std::string> digest = adapters::ParseApiKeyEntry(token);
    if (!digest && token.size() < adapters::kMinApiKeyBytes && !token.starts_with("sha256:") &&
        std::all_of(token.begin(), token.end(), [](char c) { return c >= 0x21 && c <= 0x7e; })) {
      LogEvent(LogLevel::kWarn, "admin_token_short",
               {{"bytes", token.size()},
                {"note", "use 16 to 256 bytes, or its sha256: digest (docs/configuration.md)"}});
      digest = adapters::ApiKeyDigest(token);
    }
    if (!digest) {
      return Status::InvalidArgument("server.admin_token (or RELAY_EGRESS_ADMIN_TOKEN): " +
                                     digest.error().message());
    }
    admin_token_digest_ = std::move(*digest);
  }
  for (const auto& [tenant, digests] : ConfigApiKeys()) {
    if (Status st = api_keys_.Replace(tenant, digests); !st.ok()) {
      return Status::InvalidArgument("tenants." + tenant + ".api_keys: " + st.message());
    }
  }
  return Status::Ok();
}

std::map<std::string, std::vector<std::string>> Service::ConfigApiKeys() const {
  std::map<std::string, std::vector<std::string>> by_tenant;
  for (const auto& [tenant, digest] : options_.auth.api_keys) {
    by_tenant[tenant].push_back(digest);
  }
  return by_tenant;
}

Result<uint64_t> Service::LoadSettings() {
  auto stored = ReadStoredSettings(*store_);
  if (!stored) {
    return stored.error();
  }
  if (Status st = ApplySettings(*stored); !st.ok()) {
    return st;
  }
  return stored->version;
}

Status Service::ApplySettings(const StoredSettings& stored) {
  // The API keys first and all at once: the only part that can be refused, before anything
  // changed. Replaced at run time by the admin API: a tenant's stored list wins over the config's.
  std::map<std::string, std::vector<std::string>> keys = ConfigApiKeys();
  for (const auto& [tenant, digests] : stored.api_keys) {
    keys[tenant] = digests;
  }
  for (const auto& [tenant, digests] : keys) {
    if (!admin_token_digest_.empty() &&
        std::find(digests.begin(), digests.end(), admin_token_digest_) != digests.end()) {
      return Status::InvalidArgument(
          "the admin token is also a tenant's API key: give the admin its own token");
    }
  }
  if (Status st = api_keys_.ReplaceAll(keys); !st.ok()) {
    return Status::Corruption("stored settings " + std::string(kApiKeysPrefix) + ": " +
                              st.message());
  }
  // Only the tenants whose overrides differ from those in force: SetTenantOverrides re-paces
  // their live meters. Every budget was checked when parsed, so none is refused here.
  std::set<std::string> tenants;
  for (const auto& [tenant, overrides] : stored.overrides) {
    tenants.insert(tenant);
  }
  for (const auto& [tenant, overrides] : overrides_) {
    tenants.insert(tenant);
  }
  for (const auto& [tenant, shadow] : stored.shadow) {
    tenants.insert(tenant);
  }
  for (const auto& [tenant, shadow] : shadow_) {
    tenants.insert(tenant);
  }
  for (const std::string& tenant : tenants) {
    const BudgetOverrides none;
    auto want_shadow = stored.shadow.find(tenant);
    auto held_shadow = shadow_.find(tenant);
    const BudgetOverrides& next_shadow =
        want_shadow == stored.shadow.end() ? none : want_shadow->second;
    if (!SameOverrides(held_shadow == shadow_.end() ? none : held_shadow->second, next_shadow)) {
      if (Status st = SetTenantShadowLimits(tenant, next_shadow); !st.ok()) {
        return st;
      }
    }
    auto want = stored.overrides.find(tenant);
    auto held = overrides_.find(tenant);
    const BudgetOverrides& next = want == stored.overrides.end() ? none : want->second;
    if (SameOverrides(held == overrides_.end() ? none : held->second, next)) {
      continue;
    }
    if (Status st = SetTenantOverrides(tenant, next); !st.ok()) {
      return st;
    }
  }
  quotas_->ReplaceOwnQuotas(stored.quotas);
  credentials_.ReplaceRegistered(stored.credentials);
  if (!pauses_.Same(stored.pauses)) {
    pauses_.ReplaceAll(stored.pauses);
    PausesChanged();
  }
  return Status::Ok();
}

void Service::PutPause(Pause pause) {
  pauses_.Put(std::move(pause));
  PausesChanged();
}

bool Service::RemovePause(const std::string& id) {
  if (!pauses_.Remove(id)) {
    return false;
  }
  PausesChanged();
  return true;
}

void Service::PausesChanged() {
  metrics_.Set(GaugeId::kPauses, {}, static_cast<double>(pauses_.size()));
  if (!loop_ || pauses_pass_posted_) {
    return;  // before the loop exists it matches each destination as it registers it
  }
  // One pass over the destinations for every change made in this turn (a node that reads many
  // pauses from Redis at once applies them in one pass, not one each).
  pauses_pass_posted_ = true;
  asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (auto a = alive.lock(); a && *a) {
      pauses_pass_posted_ = false;
      loop_->PausesChanged();
    }
  });
}

void Service::SharePause(const std::string& id, const std::string& text) {
  ShareSetting(PauseKey(id), text);
}

void Service::OnSharedPause(const std::string& name, const std::string& text) {
  const std::string id = name.substr(kPausesPrefix.size());
  std::optional<Pause> pause;
  if (!text.empty()) {
    auto parsed = PauseFromSetting(name, text);
    if (!parsed) {
      LogEvent(LogLevel::kWarn, "shared_setting_rejected",
               {{"setting", "pause"}, {"reason", parsed.error().message()}});
      return;
    }
    pause = std::move(*parsed);
  } else if (!IsPauseId(id)) {
    return;
  }
  if (const Pause* held = pauses_.Find(id);
      pause && held != nullptr && held->SameScope(*pause) && held->reason == pause->reason) {
    return;  // what this node holds (its own POST, or one it applied already)
  }
  // In order with every other settings write, so a DELETE that follows a POST is stored and
  // applied after it (and an ended pause not held here yet is let go once it is).
  settings_reloader_->BeginLocalChange();
  asio::post(*settings_writes_, [this, name, text, id, pause = std::move(pause)]() mutable {
    // A store every node shares holds it already (see OnSharedSetting).
    Status stored = options_.postgres ? Status::Ok() : store_->PutSetting(name, text);
    asio::post(io_, [this, stored, id, pause = std::move(pause)]() mutable {
      settings_reloader_->EndLocalChange();
      if (!stored.ok()) {
        LogEvent(LogLevel::kWarn, "shared_setting_failed",
                 {{"pause", id}, {"setting", "pause"}, {"reason", stored.message()}});
        return;
      }
      if (pause) {
        PutPause(std::move(*pause));
      } else if (!RemovePause(id)) {
        return;  // not held here: this node's own DELETE coming back, or one never seen
      }
      LogEvent(LogLevel::kInfo, pause ? "paused" : "resumed",
               {{"pause", id}, {"source", "cluster"}});
    });
  });
}

void Service::ReloadCredentialRefs(std::function<void(Status)> done) {
  asio::post(*storage_pool_, [this, done = std::move(done)] {
    std::vector<std::pair<std::string, adapters::Credential>> fresh;
    for (const ServiceOptions::CredentialRefEntry& e : options_.credential_refs) {
      adapters::Credential c = e.credential;
      if (Status s = adapters::ResolveCredentialRefs(e.refs, c); !s.ok()) {
        // The message names the reference (a path or a variable), never a value.
        LogEvent(LogLevel::kError, "credential_reload_failed",
                 {{"tenant", e.tenant}, {"credential", e.credential.name}, {"error", s.message()}});
        done(s);
        return;
      }
      fresh.emplace_back(e.tenant, std::move(c));
    }
    const size_t count = fresh.size();
    credentials_.PutAll(std::move(fresh));
    LogEvent(LogLevel::kInfo, "credentials_reloaded", {{"credentials", count}});
    done(Status::Ok());
  });
}

void Service::ReloadBudgets(std::function<Result<BudgetDefaults>()> load,
                            std::function<void(Status)> done) {
  asio::post(*storage_pool_, [this, load = std::move(load), done = std::move(done)]() mutable {
    Result<BudgetDefaults> fresh = load();
    asio::post(io_, [this, fresh = std::move(fresh), done = std::move(done)] {
      Status status = fresh ? scheduler_->SetDefaultBudgets(*fresh) : fresh.error();
      if (!status.ok()) {
        // Config errors name the file, line and field, never a secret (config/load_config.h).
        LogEvent(LogLevel::kError, "budget_reload_failed", {{"error", status.message()}});
        done(status);
        return;
      }
      for (const auto& [name, budget] : *fresh) {
        if (name == pacing::BudgetName::kTenantIntake) {
          intake_limiter_->SetDefaultBudget(budget);
        }
        auto it = std::find_if(budget_defaults_.begin(), budget_defaults_.end(),
                               [name = name](const auto& entry) { return entry.first == name; });
        if (it == budget_defaults_.end()) {
          budget_defaults_.emplace_back(name, budget);
        } else {
          it->second = budget;
        }
      }
      if (loop_) {
        loop_->BudgetsChanged();
      }
      LogEvent(LogLevel::kInfo, "budgets_reloaded", {{"budgets", fresh->size()}});
      done(Status::Ok());
    });
  });
}

Status Service::SetTenantShadowLimits(const std::string& tenant, const BudgetOverrides& shadow) {
  if (Status st = scheduler_->SetTenantShadowBudgets(tenant, shadow); !st.ok()) {
    return st;
  }
  if (shadow.empty()) {
    shadow_.erase(tenant);
  } else {
    shadow_[tenant] = shadow;
  }
  return Status::Ok();
}

const BudgetOverrides& Service::ShadowLimits(const std::string& tenant) const {
  static const BudgetOverrides kNone;
  auto it = shadow_.find(tenant);
  return it == shadow_.end() ? kNone : it->second;
}

Status Service::SetTenantOverrides(
    const std::string& tenant,
    const std::vector<std::pair<pacing::BudgetName, pacing::Budget>>& overrides) {
  // The tier's budgets under the tenant's own overrides.
  std::vector<std::pair<pacing::BudgetName, pacing::Budget>> merged = overrides;
  if (auto tier = options_.quotas.tenant_tiers.find(tenant);
      tier != options_.quotas.tenant_tiers.end()) {
    if (auto t = options_.quotas.tiers.find(tier->second); t != options_.quotas.tiers.end()) {
      for (const auto& tier_budget : t->second.budgets) {
        if (std::none_of(overrides.begin(), overrides.end(),
                         [&](const auto& o) { return o.first == tier_budget.first; })) {
          merged.push_back(tier_budget);
        }
      }
    }
  }
  if (Status st = scheduler_->SetTenantBudgets(tenant, merged); !st.ok()) {
    return st;
  }
  std::optional<pacing::Budget> intake;
  for (const auto& [name, budget] : merged) {
    if (name == pacing::BudgetName::kTenantIntake) {
      intake = budget;
    }
  }
  intake_limiter_->SetBudget(tenant, intake);
  overrides_[tenant] = overrides;
  if (loop_) {
    loop_->BudgetsChanged();
  }
  return Status::Ok();
}

std::pair<pacing::Budget, bool> Service::EffectiveBudget(const std::string& tenant,
                                                         pacing::BudgetName name) const {
  if (auto it = overrides_.find(tenant); it != overrides_.end()) {
    for (const auto& [n, budget] : it->second) {
      if (n == name) {
        return {budget, true};
      }
    }
  }
  if (std::optional<pacing::Budget> tier = TierBudget(tenant, name)) {
    return {*tier, false};
  }
  for (const auto& [n, budget] : budget_defaults_) {
    if (n == name) {
      return {budget, false};
    }
  }
  return {pacing::DefaultBudget(name), false};
}

std::optional<pacing::Budget> Service::TierBudget(const std::string& tenant,
                                                  pacing::BudgetName name) const {
  auto tier = options_.quotas.tenant_tiers.find(tenant);
  if (tier == options_.quotas.tenant_tiers.end()) {
    return std::nullopt;
  }
  auto t = options_.quotas.tiers.find(tier->second);
  if (t == options_.quotas.tiers.end()) {
    return std::nullopt;
  }
  for (const auto& [n, budget] : t->second.budgets) {
    if (n == name) {
      return budget;
    }
  }
  return std::nullopt;
}

}  // namespace egress::service
