// GET /metrics: the scrape-time refresh of the gauges rebuilt from what the loop and the store
// hold, then the text, each in bounded steps on the loop (bench/README.md, section 12).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "dispatcher/pacing/gcra_meter.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;

// Series set, or rendered, per step on the loop. At 10,000 tenants the refresh sets ~60,000
// series and the text has ~110,000: ~90 ms of the loop's CPU a text (render ~50 ms before it
// wrote integers itself, budget use ~21, deferrals ~10, depths ~8; timed in a throwaway build,
// bench/README.md section 12). A webhook that comes meanwhile waits for the step under way at
// each of its turns on the loop: steps of 1,024 series put another tenant's p99 at 13-15 ms
// against 3-4 idle, of 256 at 8-9 ms, with the text made in the same time.
constexpr size_t kRefreshStep = 256;
constexpr size_t kScrapeStep = 256;

// The text, rendered kScrapeStep series at a time, each step posted after the one before; then
// kept as the text served for a second, and sent to every scrape that waited for it.
struct Scrape {
  std::string out;
  Metrics::RenderPosition at;
};

// The text, shared with every other scrape it is sent to (no copy).
HttpResponse TextOf(std::shared_ptr<const std::string> text) {
  return TextResponse(200, ResponseText::Shared(std::move(text)), "text/plain; version=0.0.4");
}

void RenderStep(Service& s, std::shared_ptr<Scrape> scrape) {
  if (scrape->out.empty()) {
    // Room for the last text and an eighth more: growing a 9.5 MB string by doubling copied
    // it within one step (12-27 ms at 10,000 tenants, and 9-17 ms for the first text after a
    // start, whose size was not known yet). Before the first, 128 bytes a series (the text at
    // 10,000 tenants is ~86 a series: 9.5 MB of 110,042).
    const size_t last = s.metrics_text().last_bytes;
    scrape->out.reserve(last > 0 ? last + last / 8 : s.metrics().series_count() * 128);
  }
  if (!s.metrics().RenderSome(scrape->out, scrape->at, kScrapeStep)) {
    asio::post(s.io(),
               [&s, scrape = std::move(scrape)]() mutable { RenderStep(s, std::move(scrape)); });
    return;
  }
  Service::MetricsText& cache = s.metrics_text();
  cache.text = std::make_shared<const std::string>(std::move(scrape->out));
  cache.last_bytes = cache.text->size();
  cache.made = s.clock().Now();
  cache.making = false;
  std::vector<Respond> waiting = std::move(cache.waiting);
  cache.waiting.clear();
  for (Respond& respond : waiting) {
    respond(TextOf(cache.text));
  }
  // The text (9.5 MB at 10,000 tenants) is not kept past its second: a service scraped every
  // 15 s holds it a second of the 15.
  auto expiry = std::make_shared<asio::steady_timer>(s.io(), std::chrono::milliseconds(1100));
  expiry->async_wait([&s, expiry, made = *cache.made](const boost::system::error_code& ec) {
    Service::MetricsText& text = s.metrics_text();
    if (!ec && !text.making && text.made == made) {
      text.made.reset();
      text.text.reset();  // freed when the last answer that sends it is written
    }
  });
}

void Render(Service& s) { RenderStep(s, std::make_shared<Scrape>()); }

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
}

// The per-tenant series, rebuilt kRefreshStep at a time, each step reading what it sets from
// where it is kept: queue depths (the store's group counts, copied when the refresh starts),
// oldest deferrals (the loop's destinations walked oldest deferral first), budget units and
// utilization (the loop's BudgetUse, walked), quota use (the quota book), then tier utilization
// (summed over the tenants' quotas on the way) and last the series of the rebuilt gauges nobody
// set this time. No step copies or walks all of the loop's tables at once (at 10,000 tenants that
// held the loop 21-40 ms). A scrape during the refresh sees each series at its old value or its
// new one.
struct Refresh {
  Refresh(BudgetUse& use, SteadyTime now) : budget_use(use, now) {}

  uint64_t mark = 0;
  int64_t now_ms = 0;
  bool have_backlog = false;
  std::vector<storage::GroupCounts> groups;
  // The destinations holding a deferral, walked oldest deferral first: the first met of each
  // (tenant, platform) holds its oldest.
  std::optional<DestinationPosition> deferral_at;
  bool deferrals_walked = false;
  std::set<std::pair<std::string, std::string>> deferral_groups;
  BudgetUse::Walk budget_use;
  std::vector<std::string> quota_tenants;
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> tiers;
  size_t phase = 0;
  size_t at = 0;           // the next item of the phase's vector
  std::string drop_after;  // the last series of kRebuilt[at] looked at by DropUnsetSince
};

constexpr storage::DeliveryState kWaitingStates[] = {storage::DeliveryState::kQueued,
                                                     storage::DeliveryState::kInFlight,
                                                     storage::DeliveryState::kDeferred};

// Sets up to kRefreshStep series; true when the refresh is done.
bool RefreshSome(Service& s, Refresh& r) {
  Metrics& m = s.metrics();
  size_t budget = kRefreshStep;
  while (budget > 0) {
    switch (r.phase) {
      case 0:  // queue depths per (tenant, platform, state)
        if (!r.have_backlog || r.at == r.groups.size()) {
          break;
        }
        for (auto state : kWaitingStates) {
          const storage::GroupCounts& g = r.groups[r.at];
          m.Set(GaugeId::kTenantQueueDepth,
                {{"tenant", g.tenant},
                 {"platform", g.platform},
                 {"state", storage::StateName(state)}},
                static_cast<double>(storage::CountOf(g.counts, state)));
        }
        ++r.at;
        budget = budget > 3 ? budget - 3 : 0;
        continue;
      case 1: {  // the oldest deferral per (tenant, platform)
        if (r.deferrals_walked) {
          break;
        }
        size_t visited = 0;
        r.deferral_at = s.loop().WalkDeferrals(
            r.deferral_at, budget,
            [&](const std::string& tenant, const std::string& platform, int64_t deferral_ms) {
              ++visited;
              if (r.deferral_groups.emplace(tenant, platform).second) {
                m.Set(GaugeId::kOldestDeferralAge, {{"tenant", tenant}, {"platform", platform}},
                      static_cast<double>(std::max<int64_t>(0, r.now_ms - deferral_ms)) / 1000.0);
              }
            });
        r.deferrals_walked = !r.deferral_at;
        budget -= std::min(budget, std::max<size_t>(1, visited));
        continue;
      }
      case 2: {  // budget units per (tenant, budget) since start, then their utilization
                 // over the last minute; the step reads up to `budget` totals, scopes and
                 // ratios (a scope sets nothing), and ends the turn, done or not
        const bool done = r.budget_use.Step(
            budget,
            [&](const BudgetUse::Total& t) {
              m.SetTotal(CounterId::kBudgetUnits,
                         {{"tenant", t.tenant}, {"budget", pacing::BudgetNameString(t.budget)}},
                         static_cast<double>(t.units));
            },
            [&](const BudgetUse::Ratio& u) {
              m.Set(GaugeId::kBudgetUtilization,
                    {{"tenant", u.tenant}, {"budget", pacing::BudgetNameString(u.budget)}},
                    u.ratio);
            });
        if (done) {
          ++r.phase;
          r.at = 0;
        }
        budget = 0;
        continue;
      }
      case 3: {  // quota use per (tenant, quota), summed per (tier, quota) on the way
        if (r.at == r.quota_tenants.size()) {
          break;
        }
        const std::string& tenant = r.quota_tenants[r.at++];
        budget -= 1;  // a tenant with no quota counts too (10,000 of them were one turn)
        const std::string& tier = s.quotas().TierOf(tenant);
        for (const QuotaBook::Quota& q : s.quotas().QuotasOf(tenant)) {
          const QuotaBook::Usage u = s.quotas().UsageOf(tenant, q);
          const double used = static_cast<double>(u.used);
          const double limit = static_cast<double>(q.config.limit);
          m.Set(GaugeId::kQuotaUsedRatio, {{"tenant", tenant}, {"quota", q.name}}, used / limit);
          if (!tier.empty()) {
            auto& [sum_used, sum_limit] = r.tiers[{tier, q.name}];
            sum_used += used;
            sum_limit += limit;
          }
          budget = budget > 0 ? budget - 1 : 0;
        }
        continue;
      }
      case 4:  // tiers (few)
        for (const auto& [key, sums] : r.tiers) {
          m.Set(GaugeId::kTierUtilization, {{"tier", key.first}, {"budget", key.second}},
                sums.first / sums.second);
        }
        break;
      case 5: {  // what the refresh did not set goes, a gauge a step (each walks its series)
        constexpr GaugeId kRebuilt[] = {GaugeId::kTenantQueueDepth, GaugeId::kOldestDeferralAge,
                                        GaugeId::kBudgetUtilization, GaugeId::kQuotaUsedRatio,
                                        GaugeId::kTierUtilization};
        if (r.at == std::size(kRebuilt)) {
          return true;
        }
        const GaugeId gauge = kRebuilt[r.at];
        // The last depths stay when the store could not be read (the failure is counted).
        if ((gauge == GaugeId::kTenantQueueDepth && !r.have_backlog) ||
            m.DropUnsetSince(gauge, r.mark, r.drop_after, budget)) {
          ++r.at;
          r.drop_after.clear();
        }
        budget = 0;
        continue;
      }
    }
    ++r.phase;  // this phase is done
    r.at = 0;
  }
  return false;
}

void RefreshStep(Service& s, std::shared_ptr<Refresh> r) {
  if (RefreshSome(s, *r)) {
    Render(s);
    return;
  }
  asio::post(s.io(), [&s, r = std::move(r)]() mutable { RefreshStep(s, std::move(r)); });
}

}  // namespace

void GetMetrics(Service& s, Respond respond) {
  // The text is made at most once a second, however often /metrics is asked, and one at a time:
  // a scrape within a second of the last text gets it as it was (values up to a second old);
  // one that comes while a text is being made waits for it (bench/README.md, section 12: 110,000
  // series at 10,000 tenants take ~25 ms of the loop to refresh and render, in steps).
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
  if (!cache.making && cache.made && now - *cache.made < std::chrono::seconds(1)) {
    respond(TextOf(cache.text));
    return;
  }
  cache.waiting.push_back(std::move(respond));
  if (cache.making) {
    return;
  }
  cache.making = true;
  struct Backlog {
    storage::StateCounts counts;
    std::vector<storage::GroupCounts> groups;
  };
  // The queue depths come from the store's in-memory counters (no disk read), so a scrape alone
  // shows the true backlog, a restarted store's too; the store is asked on its pool as every
  // handler does.
  OnStore(
      s,
      [](storage::QueueStore& store) -> Result<Backlog> {
        auto counts = store.Counts();
        if (!counts) {
          return counts.error();
        }
        auto groups = store.BacklogByTenantPlatform();
        if (!groups) {
          return groups.error();
        }
        return Backlog{*counts, std::move(*groups)};
      },
      [&s](Result<Backlog> backlog) mutable {
        Metrics& m = s.metrics();
        auto r = std::make_shared<Refresh>(s.loop().budget_use(), s.clock().Now());
        r->mark = m.StartRebuild();
        if (backlog) {
          for (auto state : storage::kAllStates) {
            m.Set(GaugeId::kQueueDepth, {{"state", storage::StateName(state)}},
                  static_cast<double>(storage::CountOf(backlog->counts, state)));
          }
          r->have_backlog = true;
          r->groups = std::move(backlog->groups);
        } else {
          // The last depths stay; the failure is counted and the rest is still served.
          m.Inc(CounterId::kStoreErrors, {{"operation", "metrics"}});
        }
        SetServerMetrics(s);
        r->now_ms = ToUnixMillis(s.clock().WallNow());
        r->quota_tenants = s.quotas().Tenants();
        RefreshStep(s, std::move(r));
      });
}

}  // namespace egress::service
