// GET /metrics: the scrape-time refresh of the gauges rebuilt from what the loop and the store
// hold, then the text, each in bounded steps on the loop (bench/README.md, section 12).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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

// Series set, or rendered, per step on the loop. A step of either holds the loop ~1-3 ms on the
// 2-core machine; at 10,000 tenants the refresh sets ~60,000 series and the text has ~110,000
// (the whole refresh at once held the loop ~40-70 ms).
constexpr size_t kRefreshStep = 2048;
constexpr size_t kScrapeStep = 4096;

// The text, rendered kScrapeStep series at a time, each step posted after the one before; then
// kept as the text served for a second, and sent to every scrape that waited for it.
struct Scrape {
  std::string out;
  Metrics::RenderPosition at;
};

HttpResponse TextOf(const std::string& text) {
  return TextResponse(200, text, "text/plain; version=0.0.4");
}

void RenderStep(Service& s, std::shared_ptr<Scrape> scrape) {
  if (!s.metrics().RenderSome(scrape->out, scrape->at, kScrapeStep)) {
    asio::post(s.io(),
               [&s, scrape = std::move(scrape)]() mutable { RenderStep(s, std::move(scrape)); });
    return;
  }
  Service::MetricsText& cache = s.metrics_text();
  cache.text = std::move(scrape->out);
  cache.last_bytes = cache.text.size();
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
      std::string().swap(text.text);
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

// The per-tenant series, rebuilt from a snapshot taken when the refresh starts and set
// kRefreshStep at a time: queue depths (from the store), oldest deferrals, budget units and
// utilization (from the loop), quota use (from the quota book), then tier utilization (summed
// over the tenants' quotas on the way) and last the series of the rebuilt gauges nobody set
// this time. A scrape during the refresh sees each series at its old value or its new one.
struct Refresh {
  uint64_t mark = 0;
  int64_t now_ms = 0;
  bool have_backlog = false;
  std::vector<storage::GroupCounts> groups;
  std::map<std::pair<std::string, std::string>, int64_t> deferrals;
  std::map<std::pair<std::string, std::string>, int64_t>::const_iterator next_deferral;
  std::vector<BudgetUse::Total> totals;
  std::vector<BudgetUse::Ratio> ratios;
  std::vector<std::string> quota_tenants;
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> tiers;
  size_t phase = 0;
  size_t at = 0;  // the next item of the phase's vector
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
      case 1:  // the oldest deferral per (tenant, platform)
        if (r.next_deferral == r.deferrals.cend()) {
          break;
        }
        m.Set(
            GaugeId::kOldestDeferralAge,
            {{"tenant", r.next_deferral->first.first}, {"platform", r.next_deferral->first.second}},
            static_cast<double>(std::max<int64_t>(0, r.now_ms - r.next_deferral->second)) / 1000.0);
        ++r.next_deferral;
        --budget;
        continue;
      case 2:  // budget units per (tenant, budget) since start
        if (r.at == r.totals.size()) {
          break;
        }
        m.SetTotal(CounterId::kBudgetUnits,
                   {{"tenant", r.totals[r.at].tenant},
                    {"budget", pacing::BudgetNameString(r.totals[r.at].budget)}},
                   static_cast<double>(r.totals[r.at].units));
        ++r.at;
        --budget;
        continue;
      case 3:  // budget utilization per (tenant, budget) over the last minute
        if (r.at == r.ratios.size()) {
          break;
        }
        m.Set(GaugeId::kBudgetUtilization,
              {{"tenant", r.ratios[r.at].tenant},
               {"budget", pacing::BudgetNameString(r.ratios[r.at].budget)}},
              r.ratios[r.at].ratio);
        ++r.at;
        --budget;
        continue;
      case 4: {  // quota use per (tenant, quota), summed per (tier, quota) on the way
        if (r.at == r.quota_tenants.size()) {
          break;
        }
        const std::string& tenant = r.quota_tenants[r.at++];
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
      case 5:  // tiers (few), then what the refresh did not set goes
        for (const auto& [key, sums] : r.tiers) {
          m.Set(GaugeId::kTierUtilization, {{"tier", key.first}, {"budget", key.second}},
                sums.first / sums.second);
        }
        // The last depths stay when the store could not be read (the failure is counted).
        if (r.have_backlog) {
          m.DropUnsetSince(GaugeId::kTenantQueueDepth, r.mark);
        }
        m.DropUnsetSince(GaugeId::kOldestDeferralAge, r.mark);
        m.DropUnsetSince(GaugeId::kBudgetUtilization, r.mark);
        m.DropUnsetSince(GaugeId::kQuotaUsedRatio, r.mark);
        m.DropUnsetSince(GaugeId::kTierUtilization, r.mark);
        return true;
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
        auto r = std::make_shared<Refresh>();
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
        r->deferrals = s.loop().OldestDeferrals();
        r->next_deferral = r->deferrals.cbegin();
        BudgetUse& use = s.loop().budget_use();
        r->totals = use.Totals();
        r->ratios = use.Utilization(s.clock().Now());
        r->quota_tenants = s.quotas().Tenants();
        RefreshStep(s, std::move(r));
      });
}

}  // namespace egress::service
