// GET /metrics: the families kept in Metrics rendered in bounded steps on the loop, and the
// families collected at each scrape (a tenant's backlog, oldest deferral, budget and quota use)
// gathered in steps on the loop and written on the render pool, which also makes a text's gzip
// when a scrape asks for it (bench/README.md, section 12).

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>
#include <sys/resource.h>

#include "dispatcher/pacing/gcra_meter.h"
#include "dispatcher/service/api/gzip.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;

// Series rendered, or items gathered, per step on the loop. At 10,000 tenants the text has
// ~110,000 series, ~60,000 of them in the collected families (Metrics::IsCollected). Set into
// the metrics' map once a second and rendered from it, they took ~90 ms of the loop's CPU a
// text in steps (budget use ~21, oldest deferrals ~10, depths ~8, the render ~50; timed in a
// throwaway build, bench/README.md section 12), and a webhook that came meanwhile waited for the
// step under way at each of its turns on the loop. Now the loop only copies what they show, a
// step at a time, and the render pool writes them.
constexpr size_t kGatherStep = 512;
constexpr size_t kScrapeStep = 256;

// The CPU time this thread has used, in ns: what a text costs, whichever threads make it,
// whatever else they wait for (MetricsTextKept). Read from the kernel, not the injected Clock: a
// measure of work done, never a time anything is scheduled by.
int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Adds the thread's CPU time from its making to its end to `sum`.
class CpuTally {
 public:
  explicit CpuTally(int64_t& sum) : sum_(sum), start_(ThreadCpuNs()) {}
  ~CpuTally() { sum_ += ThreadCpuNs() - start_; }
  CpuTally(const CpuTally&) = delete;
  CpuTally& operator=(const CpuTally&) = delete;

 private:
  int64_t& sum_;
  int64_t start_;
};

// What the collected families show, gathered on the loop in steps and written on the render
// pool. The depths are the store's (copied on the storage pool); the rest are the loop's.
struct Gathered {
  std::shared_ptr<const std::vector<storage::GroupCounts>> groups;  // null: never read
  struct Age {
    std::string tenant;
    std::string platform;
    double seconds = 0;
  };
  std::vector<Age> deferrals;  // the oldest per (tenant, platform)
  std::vector<BudgetUse::Total> totals;
  std::vector<BudgetUse::Ratio> ratios;
  struct QuotaUse {
    std::string tenant;
    std::string quota;
    double ratio = 0;
  };
  std::vector<QuotaUse> quotas;
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> tiers;
};

// One text on its way: gathered (phases 0-2), the kept families rendered on the loop, the
// collected ones appended on the render pool.
struct Scrape {
  Scrape(BudgetUse& use, SteadyTime now) : budget_use(use, now) {}

  Gathered gathered;
  int64_t now_ms = 0;
  std::optional<DestinationPosition> deferral_at;
  bool deferrals_walked = false;
  std::unordered_set<std::string> deferral_groups;  // "<tenant>\x1f<platform>"
  BudgetUse::Walk budget_use;
  std::vector<std::string> quota_tenants;
  size_t phase = 0;
  size_t at = 0;  // the next of quota_tenants
  std::string out;
  Metrics::RenderPosition render_at;
  int64_t cpu_ns = 0;  // the threads' CPU time for this text so far
};

// A text made `age` ago (RFC 9111's Age, in whole seconds), shared with every other scrape it
// is sent to (no copy): as gzip when `gzipped` is its gzip, as it is when that is null.
HttpResponse TextOf(std::shared_ptr<const std::string> text,
                    std::shared_ptr<const std::string> gzipped, SteadyTime::duration age) {
  namespace http = boost::beast::http;
  const bool gzip = gzipped != nullptr;
  HttpResponse res =
      TextResponse(200, ResponseText::Shared(gzip ? std::move(gzipped) : std::move(text)),
                   "text/plain; version=0.0.4");
  if (gzip) {
    res.set(http::field::content_encoding, "gzip");
  }
  res.set(http::field::vary, "Accept-Encoding");
  res.set(http::field::age,
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(age).count()));
  return res;
}

constexpr storage::DeliveryState kWaitingStates[] = {storage::DeliveryState::kQueued,
                                                     storage::DeliveryState::kInFlight,
                                                     storage::DeliveryState::kDeferred};

// Appends the collected families (any thread: reads only `g`).
void AppendCollected(std::string& out, const Gathered& g) {
  Metrics::AppendHead(out, CounterId::kBudgetUnits);
  for (const BudgetUse::Total& t : g.totals) {
    Metrics::AppendSample(out, CounterId::kBudgetUnits,
                          {{"tenant", t.tenant}, {"budget", pacing::BudgetNameString(t.budget)}},
                          static_cast<double>(t.units));
  }
  Metrics::AppendHead(out, GaugeId::kBudgetUtilization);
  for (const BudgetUse::Ratio& u : g.ratios) {
    Metrics::AppendSample(out, GaugeId::kBudgetUtilization,
                          {{"tenant", u.tenant}, {"budget", pacing::BudgetNameString(u.budget)}},
                          u.ratio);
  }
  Metrics::AppendHead(out, GaugeId::kTenantQueueDepth);
  if (g.groups) {
    for (const storage::GroupCounts& group : *g.groups) {
      for (auto state : kWaitingStates) {
        Metrics::AppendSample(out, GaugeId::kTenantQueueDepth,
                              {{"tenant", group.tenant},
                               {"platform", group.platform},
                               {"state", storage::StateName(state)}},
                              static_cast<double>(storage::CountOf(group.counts, state)));
      }
    }
  }
  Metrics::AppendHead(out, GaugeId::kOldestDeferralAge);
  for (const Gathered::Age& a : g.deferrals) {
    Metrics::AppendSample(out, GaugeId::kOldestDeferralAge,
                          {{"tenant", a.tenant}, {"platform", a.platform}}, a.seconds);
  }
  Metrics::AppendHead(out, GaugeId::kQuotaUsedRatio);
  for (const Gathered::QuotaUse& q : g.quotas) {
    Metrics::AppendSample(out, GaugeId::kQuotaUsedRatio, {{"tenant", q.tenant}, {"quota", q.quota}},
                          q.ratio);
  }
  Metrics::AppendHead(out, GaugeId::kTierUtilization);
  for (const auto& [key, sums] : g.tiers) {
    Metrics::AppendSample(out, GaugeId::kTierUtilization,
                          {{"tier", key.first}, {"budget", key.second}}, sums.first / sums.second);
  }
}

// The render pool's thread yields the CPU to the loop's: on the 2-core machine the text's
// ~20 ms of writing otherwise took turns with the loop under the scheduler.
void LowerThisThreadsPriority() {
  thread_local bool lowered = false;
  if (!lowered) {
    lowered = true;
    // Ten below where it is (setpriority sets, it does not add: under a unit's Nice=15 a plain
    // 10 would raise it), at most 19. Best effort: nothing to do when it cannot.
    const auto tid = static_cast<id_t>(gettid());
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, tid);
    if (errno == 0) {
      (void)setpriority(PRIO_PROCESS, tid, std::min(now + 10, 19));
    }
  }
}

// Answers a scrape that accepts gzip with the kept text as gzip: made on the render pool the
// first time a scrape asks for it (one gzip a text, whoever asks), and kept with the text. The
// scrapes that ask meanwhile wait for it. When zlib fails (no memory) they get the text as it is.
void AnswerGzip(Service& s, Respond respond) {
  Service::MetricsText& cache = s.metrics_text();
  if (cache.gzipped) {
    respond(TextOf(cache.text, cache.gzipped, s.clock().Now() - *cache.made));
    return;
  }
  cache.gzip_waiting.push_back({std::move(respond), cache.text, *cache.made});
  if (cache.gzipping) {
    return;
  }
  cache.gzipping = true;
  asio::post(s.render_pool(), [&s, alive = s.alive(), text = cache.text] {
    LowerThisThreadsPriority();
    int64_t cpu_ns = 0;
    std::optional<std::string> made_gzip;
    {
      CpuTally tally(cpu_ns);
      made_gzip = Gzip(*text);
    }
    asio::post(s.io(), [&s, alive, text, cpu_ns, made_gzip = std::move(made_gzip)]() mutable {
      auto a = alive.lock();
      if (!a || !*a) {
        return;
      }
      Service::MetricsText& cache = s.metrics_text();
      cache.gzipping = false;
      std::shared_ptr<const std::string> gzipped;
      if (made_gzip) {
        gzipped = std::make_shared<const std::string>(std::move(*made_gzip));
      }
      if (cache.text == text) {
        // Still the kept text: kept with it, and the text kept longer for its CPU
        // (MetricsTextKept counts every thread's work for a text, its gzip's too).
        cache.gzipped = gzipped;
        cache.cpu += std::chrono::nanoseconds(cpu_ns);
        cache.kept = Service::MetricsTextKept(cache.cpu);
        s.metrics().Set(GaugeId::kMetricsTextKept, {},
                        std::chrono::duration<double>(cache.kept).count());
      }
      std::vector<Service::MetricsText::GzipWaiting> waiting = std::move(cache.gzip_waiting);
      cache.gzip_waiting.clear();
      for (Service::MetricsText::GzipWaiting& w : waiting) {
        if (w.text == text) {
          w.respond(TextOf(text, gzipped, s.clock().Now() - w.made));
        } else if (w.text == cache.text) {
          AnswerGzip(s, std::move(w.respond));  // came for the text made since: its own gzip
        } else {
          w.respond(TextOf(w.text, nullptr, s.clock().Now() - w.made));  // that one is gone
        }
      }
    });
  });
}

// Drops the text made at `made` when its time is over: `kept` (its time when armed) from its
// making, checked `wait` from now. Its time may grow meanwhile (its gzip's CPU is added to it):
// then it waits for what was added. Timed by the loop's timer, as the answers' freshness is by
// the service's clock: a test's clock standing still does not keep a text for ever.
void ExpireAfter(Service& s, SteadyTime made, std::chrono::nanoseconds kept,
                 std::chrono::nanoseconds wait) {
  auto expiry = std::make_shared<asio::steady_timer>(s.io(), wait + std::chrono::milliseconds(100));
  expiry->async_wait(
      [&s, alive = s.alive(), expiry, made, kept](const boost::system::error_code& ec) {
        auto a = alive.lock();
        if (ec || !a || !*a) {
          return;
        }
        Service::MetricsText& text = s.metrics_text();
        if (text.making || text.made != made) {
          return;  // a text made since (Publish asked for the release)
        }
        if (text.kept > kept) {
          ExpireAfter(s, made, text.kept, text.kept - kept);
          return;
        }
        const size_t bytes = text.text->size();
        text.made.reset();
        text.text.reset();  // freed when the last answer that sends it is written
        text.gzipped.reset();
        // Its memory given back as after a large answer. A plain answer asks for that when it
        // is written, but answers as gzip are under 1 MiB: after scrapes that all took gzip, a
        // text of 10,000 tenants stayed in the allocator, RSS 16-17 MiB over what it was before.
        s.http_server().Freed(bytes);
      });
}

// Hands the finished text, made with `cpu_ns` of the threads' time, to the scrapes that waited
// for it, and keeps it for as long as MetricsTextKept says.
void Publish(Service& s, std::string text, int64_t cpu_ns) {
  Service::MetricsText& cache = s.metrics_text();
  if (cache.text) {
    s.http_server().Freed(cache.text->size());  // the text it replaces, as ExpireAfter does
  }
  cache.text = std::make_shared<const std::string>(std::move(text));
  cache.gzipped.reset();
  cache.last_bytes = cache.text->size();
  cache.made = cache.begun;  // its values are of then on (Age counts from it)
  cache.cpu = std::chrono::nanoseconds(cpu_ns);
  cache.kept = Service::MetricsTextKept(cache.cpu);
  cache.making = false;
  // Shown in the next text: how long this one is answered.
  s.metrics().Set(GaugeId::kMetricsTextKept, {}, std::chrono::duration<double>(cache.kept).count());
  std::vector<Service::MetricsText::Waiting> waiting = std::move(cache.waiting);
  cache.waiting.clear();
  for (Service::MetricsText::Waiting& w : waiting) {
    if (w.gzip) {
      AnswerGzip(s, std::move(w.respond));
    } else {
      w.respond(TextOf(cache.text, nullptr, s.clock().Now() - *cache.made));
    }
  }
  // The text (9.5 MB at 10,000 tenants) is not kept past its time: a service scraped every
  // 15 s holds it for up to 10 s of the 15.
  ExpireAfter(s, *cache.made, cache.kept, cache.kept);
}

// The kept families, kScrapeStep series a step on the loop; then the collected ones on the
// render pool, and back to the loop to publish.
void RenderStep(Service& s, std::shared_ptr<Scrape> scrape) {
  bool rendered = false;
  {
    CpuTally tally(scrape->cpu_ns);
    if (scrape->out.empty()) {
      // Room for the last text and an eighth more: growing a 9.5 MB string by doubling copied
      // it within one step (12-27 ms at 10,000 tenants). Before the first, 128 bytes a series
      // kept and a series gathered (the text at 10,000 tenants is ~86 a series).
      const size_t last = s.metrics_text().last_bytes;
      const Gathered& g = scrape->gathered;
      const size_t collected = (g.groups ? 3 * g.groups->size() : 0) + g.deferrals.size() +
                               g.totals.size() + g.ratios.size() + g.quotas.size();
      scrape->out.reserve(last > 0 ? last + last / 8
                                   : (s.metrics().series_count() + collected) * 128);
    }
    rendered = s.metrics().RenderSome(scrape->out, scrape->render_at, kScrapeStep);
  }
  if (!rendered) {
    asio::post(s.io(),
               [&s, scrape = std::move(scrape)]() mutable { RenderStep(s, std::move(scrape)); });
    return;
  }
  asio::post(s.render_pool(), [&s, scrape = std::move(scrape)]() mutable {
    LowerThisThreadsPriority();
    int64_t cpu_ns = scrape->cpu_ns;
    std::string text;
    {
      CpuTally tally(cpu_ns);
      AppendCollected(scrape->out, scrape->gathered);
      text = std::move(scrape->out);
      // Only the text goes back: the rest (60,000 entries gathered at 10,000 tenants, and the
      // walks' keys) is freed here, off the loop, and counted.
      scrape.reset();
    }
    asio::post(s.io(), [&s, alive = s.alive(), text = std::move(text), cpu_ns]() mutable {
      if (auto a = alive.lock(); a && *a) {
        Publish(s, std::move(text), cpu_ns);
      }
    });
  });
}

// What a scrape sets from the HTTP server and the transport: a few series, at once.
void SetServerMetrics(Service& s) {
  const HttpServerStats& http = s.http_stats();
  Metrics& m = s.metrics();
  m.Set(GaugeId::kHttpConnections, {}, static_cast<double>(http.open));
  m.SetTotal(CounterId::kHttpConnectionsRefused, {{"reason", "max_connections"}},
             static_cast<double>(http.refused));
  m.SetTotal(CounterId::kHttpConnectionsRefused, {{"reason", "per_address"}},
             static_cast<double>(http.refused_per_address));
  m.SetTotal(CounterId::kHttpBusy, {}, static_cast<double>(http.busy));
  m.SetTotal(CounterId::kHttpTimeouts, {{"direction", "header"}},
             static_cast<double>(http.header_timeouts));
  m.SetTotal(CounterId::kHttpAcceptFailures, {}, static_cast<double>(http.accept_failures));
  m.SetTotal(CounterId::kHttpTimeouts, {{"direction", "read"}},
             static_cast<double>(http.read_timeouts));
  m.SetTotal(CounterId::kHttpTimeouts, {{"direction", "write"}},
             static_cast<double>(http.write_timeouts));
  m.SetTotal(CounterId::kConnectionsOpened, {},
             static_cast<double>(s.transport().ConnectionsOpened()));
  if (const pacing::LearnedShare* learned = s.learned_share()) {
    const pacing::LearnedShareCounts c = learned->counts();
    m.SetTotal(CounterId::kLearnedUpdates, {{"direction", "published"}},
               static_cast<double>(c.published));
    m.SetTotal(CounterId::kLearnedUpdates, {{"direction", "applied"}},
               static_cast<double>(c.applied));
    m.SetTotal(CounterId::kLearnedUpdates, {{"direction", "dropped"}},
               static_cast<double>(c.dropped));
    m.SetTotal(CounterId::kLearnedUpdates, {{"direction", "rejected"}},
               static_cast<double>(c.rejected));
  }
}

// Gathers up to kGatherStep items of the collected families from the loop's tables: the oldest
// deferrals (the loop's destinations walked oldest deferral first), budget units and
// utilization (the loop's BudgetUse, walked), quota use (the quota book) with the tiers summed
// on the way. True when done. No step walks all of a table at once (at 10,000 tenants that held
// the loop 21-40 ms).
bool GatherSome(Service& s, Scrape& r) {
  Gathered& g = r.gathered;
  size_t budget = kGatherStep;
  while (budget > 0) {
    switch (r.phase) {
      case 0: {  // the oldest deferral per (tenant, platform)
        if (r.deferrals_walked) {
          break;
        }
        size_t visited = 0;
        std::string group;
        r.deferral_at = s.loop().WalkDeferrals(
            r.deferral_at, budget,
            [&](const std::string& tenant, std::string_view platform, int64_t deferral_ms) {
              ++visited;
              group.assign(tenant).push_back('\x1f');
              group.append(platform);
              if (r.deferral_groups.insert(group).second) {
                g.deferrals.push_back(
                    {tenant, std::string(platform),
                     static_cast<double>(std::max<int64_t>(0, r.now_ms - deferral_ms)) / 1000.0});
              }
            });
        r.deferrals_walked = !r.deferral_at;
        budget -= std::min(budget, std::max<size_t>(1, visited));
        continue;
      }
      case 1: {  // budget units per (tenant, budget) since start, then their utilization over
                 // the last minute; the step reads up to `budget` totals, scopes and ratios
                 // and ends the turn, done or not
        const bool done = r.budget_use.Step(
            budget, [&](const BudgetUse::Total& t) { g.totals.push_back(t); },
            [&](const BudgetUse::Ratio& u) { g.ratios.push_back(u); });
        if (done) {
          ++r.phase;
        }
        budget = 0;
        continue;
      }
      case 2: {  // quota use per (tenant, quota), summed per (tier, quota) on the way
        if (r.at == r.quota_tenants.size()) {
          return true;
        }
        const std::string& tenant = r.quota_tenants[r.at++];
        budget -= 1;  // a tenant with no quota counts too (10,000 of them were one turn)
        const std::string& tier = s.quotas().TierOf(tenant);
        for (const QuotaBook::Quota& q : s.quotas().QuotasOf(tenant)) {
          const QuotaBook::Usage u = s.quotas().UsageOf(tenant, q);
          const double used = static_cast<double>(u.used);
          const double limit = static_cast<double>(q.config.limit);
          g.quotas.push_back({tenant, q.name, used / limit});
          if (!tier.empty()) {
            auto& [sum_used, sum_limit] = g.tiers[{tier, q.name}];
            sum_used += used;
            sum_limit += limit;
          }
          budget = budget > 0 ? budget - 1 : 0;
        }
        continue;
      }
    }
    ++r.phase;  // this phase is done
  }
  return false;
}

void GatherStep(Service& s, std::shared_ptr<Scrape> r) {
  bool gathered = false;
  {
    CpuTally tally(r->cpu_ns);
    gathered = GatherSome(s, *r);
  }
  if (gathered) {
    RenderStep(s, std::move(r));
    return;
  }
  asio::post(s.io(), [&s, r = std::move(r)]() mutable { GatherStep(s, std::move(r)); });
}

}  // namespace

void GetMetrics(Service& s, bool accepts_gzip, Respond respond) {
  // The text is made one at a time, and served for up to 10 s however often /metrics is asked
  // (Service::MetricsTextKept; 1 s for a text of a few tenants): a scrape within that time of the
  // last text gets it as it was, with its Age; one that comes while a text is being made waits
  // for it (bench/README.md, section 12).
  Service::MetricsText& cache = s.metrics_text();
  const SteadyTime now = s.clock().Now();
  // In units of 64 KiB: a scrape of a text smaller than that costs one.
  constexpr int64_t kUnit = 64 << 10;
  constexpr int64_t kUnitsPerSecond = Service::kMetricsBytesPerSecond / kUnit;
  const pacing::GcraParams rate{.interval_ns = 1'000'000'000 / kUnitsPerSecond,
                                .depth = kUnitsPerSecond};
  const int64_t cost =
      std::clamp<int64_t>(static_cast<int64_t>(cache.last_bytes) / kUnit, 1, 1'000'000);
  const pacing::GcraDecision d =
      pacing::GcraEvaluate(cache.tat_ns, rate, cost, now.time_since_epoch().count());
  if (!d.allowed) {
    const int64_t wait_ms = (d.retry_after.count() + 999'999) / 1'000'000;
    HttpResponse busy =
        JsonResponse(429, {{"error", "too_many_scrapes"},
                           {"message", fmt::format("/metrics answers {} MiB of text a second",
                                                   Service::kMetricsBytesPerSecond >> 20)},
                           {"retry_after_ms", wait_ms}});
    busy.set("Retry-After", std::to_string((wait_ms + 999) / 1000));
    respond(std::move(busy));
    return;
  }
  cache.tat_ns = d.tat_ns;
  if (!cache.making && cache.made && now - *cache.made < cache.kept) {
    if (accepts_gzip) {
      AnswerGzip(s, std::move(respond));
    } else {
      respond(TextOf(cache.text, nullptr, now - *cache.made));
    }
    return;
  }
  cache.waiting.push_back({std::move(respond), accepts_gzip});
  if (cache.making) {
    return;
  }
  cache.making = true;
  cache.begun = now;
  const int64_t begun_ms = ToUnixMillis(s.clock().WallNow());
  struct Backlog {
    storage::StateCounts counts;
    std::vector<storage::GroupCounts> groups;
    storage::StoreMemory memory;
    int64_t cpu_ns = 0;  // the storage thread's, reading them
  };
  // The queue depths come from the store's in-memory counters (no disk read), so a scrape alone
  // shows the true backlog, a restarted store's too; the store is asked on its pool as every
  // handler does.
  OnStore(
      s,
      [](storage::QueueStore& store) -> Result<Backlog> {
        const int64_t start = ThreadCpuNs();
        auto counts = store.Counts();
        if (!counts) {
          return counts.error();
        }
        auto groups = store.BacklogByTenantPlatform();
        if (!groups) {
          return groups.error();
        }
        Backlog backlog{*counts, std::move(*groups), store.MemoryUse()};
        backlog.cpu_ns = ThreadCpuNs() - start;
        return backlog;
      },
      [&s, begun_ms](Result<Backlog> backlog) mutable {
        auto r = std::make_shared<Scrape>(s.loop().budget_use(), s.clock().Now());
        {
          CpuTally tally(r->cpu_ns);
          Metrics& m = s.metrics();
          Service::MetricsText& cache = s.metrics_text();
          if (backlog) {
            r->cpu_ns += backlog->cpu_ns;
            for (auto state : storage::kAllStates) {
              m.Set(GaugeId::kQueueDepth, {{"state", storage::StateName(state)}},
                    static_cast<double>(storage::CountOf(backlog->counts, state)));
            }
            cache.last_groups = std::make_shared<const std::vector<storage::GroupCounts>>(
                std::move(backlog->groups));
            const storage::StoreMemory& mem = backlog->memory;
            for (const auto& [part, bytes] : {std::pair{"memtables", mem.memtables},
                                              {"table_readers", mem.table_readers},
                                              {"block_cache", mem.block_cache},
                                              {"record_cache", mem.record_cache}}) {
              m.Set(GaugeId::kStoreMemoryBytes, {{"part", part}}, static_cast<double>(bytes));
            }
          } else {
            // The last depths stay; the failure is counted and the rest is still served.
            m.Inc(CounterId::kStoreErrors, {{"operation", "metrics"}});
          }
          r->gathered.groups = cache.last_groups;
          SetServerMetrics(s);
          r->now_ms = ToUnixMillis(s.clock().WallNow());
          m.Set(GaugeId::kMetricsTextMade, {}, static_cast<double>(begun_ms) / 1000.0);
          r->quota_tenants = s.quotas().Tenants();
        }
        GatherStep(s, std::move(r));
      });
}

}  // namespace egress::service
