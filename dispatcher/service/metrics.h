#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace egress::service {

// The metrics the service exports, by type. Each id has exactly one row in the table in
// metrics.cc, which gives its name, help text and (histograms) buckets and the order /metrics
// renders them in; the build fails when an id has no row or two. Labels shown after each id are
// the ones its callers pass.
enum class CounterId : uint8_t {
  kDeliveriesAccepted,          // relay_egress_deliveries_accepted_total{tenant,platform}
  kDeliveries,                  // relay_egress_deliveries_total{platform,outcome,priority}
  kDeferrals,                   // relay_egress_deferrals_total{tenant,platform,reason}
  kThrottles,                   // relay_egress_throttles_total{tenant,platform,reason}
  kPlatform429,                 // relay_egress_platform_429_total{platform} (deprecated)
  kPlatformResponses,           // relay_egress_platform_responses_total{platform,code_class}
  kBudgetUnits,                 // relay_egress_budget_units_total{tenant,budget}
  kBudgetNearLimit,             // relay_egress_budget_near_limit_total{tenant,budget}
  kShadowChecked,               // relay_egress_shadow_checked_total{tenant,budget}
  kShadowThrottled,             // relay_egress_shadow_throttled_total{tenant,budget}
  kIntakeRejections,            // relay_egress_intake_rejections_total{tenant,reason}
  kStoreErrors,                 // relay_egress_store_errors_total{operation}
  kDiscordInvalidRequestStops,  // relay_egress_discord_invalid_request_stops_total{credential}
  kPurged,                      // relay_egress_purged_total{state}
  kIdempotencyKeysExpired,      // relay_egress_idempotency_keys_expired_total
  kHttpConnectionsRefused,      // relay_egress_http_connections_refused_total{reason}
  kHttpAcceptFailures,          // relay_egress_http_accept_failures_total
  kHttpTimeouts,                // relay_egress_http_timeouts_total{direction}
  kCorruptRecords,              // relay_egress_corrupt_records_total
  kAuthFailures,                // relay_egress_auth_failures_total{reason}
  kConnectionsOpened,           // relay_egress_connections_opened_total
  kQuotaRejections,             // relay_egress_quota_rejections_total{tenant,quota}
  kQuotaShadowRejections,       // relay_egress_quota_shadow_rejections_total{tenant,quota}
  kHttpBusy,                    // relay_egress_http_busy_total
  kAccessTokenFetches,          // relay_egress_access_token_fetches_total{platform,result}
  kLearnedUpdates,              // relay_egress_learned_updates_total{direction}
  kSendsHeld,                   // relay_egress_sends_held_total{platform}
  kMaxValue = kSendsHeld,
};
enum class GaugeId : uint8_t {
  kQueueDepth,         // relay_egress_queue_depth{state}
  kTenantQueueDepth,   // relay_egress_tenant_queue_depth{tenant,platform,state}
  kOldestDeferralAge,  // relay_egress_oldest_deferral_age_seconds{tenant,platform}
  kBudgetUtilization,  // relay_egress_budget_utilization_ratio{tenant,budget}
  kDestinations,       // relay_egress_destinations
  kStoreBytes,         // relay_egress_store_bytes
  kHttpConnections,    // relay_egress_http_connections
  kStoreHealthy,       // relay_egress_store_healthy
  kQuotaUsedRatio,     // relay_egress_quota_used_ratio{tenant,quota}
  kTierUtilization,    // relay_egress_tier_utilization_ratio{tier,budget}
  kBuildInfo,          // relay_egress_build_info{version}
  kBudgetStoreUp,      // relay_egress_budget_store_up
  kStoreShardsHeld,    // relay_egress_store_shards_held
  kPauses,             // relay_egress_pauses
  kPaused,             // relay_egress_paused{tenant,platform}
  kStoreMemoryBytes,   // relay_egress_store_memory_bytes{part}
  kMetricsTextKept,    // relay_egress_metrics_text_kept_seconds
  kMetricsTextMade,    // relay_egress_metrics_text_made_timestamp_seconds
  kMaxValue = kMetricsTextMade,
};
enum class HistogramId : uint8_t {
  kBucketFillRatio,  // relay_egress_bucket_fill_ratio{platform}
  kAttemptDuration,  // relay_egress_attempt_duration_seconds{platform}
  kMaxValue = kAttemptDuration,
};

// Prometheus metrics with the relay_egress_ prefix, addressed by id, so a metric that is not
// declared cannot be named. All methods run on the service loop, but the static ones (any
// thread).
class Metrics {
 public:
  // Label names and values, in the order they are rendered; only read during the call.
  using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

  // Starts with relay_egress_build_info{version} at 1.
  Metrics();
  // The version relay_egress_build_info shows (the CMake project's).
  static std::string_view Version();

  void Inc(CounterId id, const Labels& labels = {}, double by = 1);
  // Mirrors a count another component keeps (it only grows): the series becomes `total`.
  void SetTotal(CounterId id, const Labels& labels, double total);
  void Set(GaugeId id, const Labels& labels, double value);
  // Drops every series of the gauge.
  void Clear(GaugeId id);
  // Drops one series of the gauge (nothing when it has none).
  void Erase(GaugeId id, const Labels& labels);
  // The families of a tenant's backlog, oldest deferral, budget use and quota use are not kept
  // here: GET /metrics writes them at each scrape from what it gathers then, off the loop (as
  // Prometheus's collectors do), so their 60,000 series at 10,000 tenants are not kept as
  // series between scrapes. Inc, SetTotal, Set, Value, Total, Clear and Erase on one of them
  // are errors; RenderSome leaves them out, and AppendHead and AppendSample write them.
  static bool IsCollected(CounterId id);
  static bool IsCollected(GaugeId id);
  // Appends the family's HELP and TYPE lines, as RenderSome writes them.
  static void AppendHead(std::string& out, CounterId id);
  static void AppendHead(std::string& out, GaugeId id);
  // Appends one sample, "name{labels} value", the labels as Set keys them (escaped, redacted,
  // valid UTF-8) and the value as RenderSome writes it.
  static void AppendSample(std::string& out, CounterId id, const Labels& labels, double value);
  static void AppendSample(std::string& out, GaugeId id, const Labels& labels, double value);
  void Observe(HistogramId id, const Labels& labels, double value);
  // The value of a series, 0 when never touched (tests, stats).
  double Value(CounterId id, const Labels& labels = {}) const;
  double Value(GaugeId id, const Labels& labels = {}) const;
  // Sum over all series of a counter (e.g. 429s received on every platform): O(1), kept as the
  // series change (GET /v1/stats reads five: summed over their series, it answered in 0.86-0.89
  // ms at 10,000 tenants, 0.31 ms now; bench/README.md section 12).
  double Total(CounterId id) const;
  // Of a counter summed by one of its labels (kDeferrals by reason, kDeliveries by outcome):
  // the sums by that label's value, as the text shows the value (redacted, valid UTF-8). O(values
  // of the label), kept as the series change: GET /v1/stats shows them, so `top` need not read
  // the whole text (9.5 MB at 10,000 tenants) for them.
  std::map<std::string, double> TotalsBy(CounterId id) const;

  // The declared name, e.g. "relay_egress_deliveries_total".
  static std::string_view Name(CounterId id);
  static std::string_view Name(GaugeId id);
  static std::string_view Name(HistogramId id);

  // The text exposition format, version 0.0.4 (without the collected families).
  std::string Render() const;
  // The same a part at a time (GET /metrics renders in steps, so the loop serves others between
  // them): appends to `out` the next at
  // most `max_series` series after `at`, and returns true when the whole text is out. Series
  // added or dropped between steps are shown or not as their place in the order is passed.
  struct RenderPosition {
    size_t definition = 0;
    bool headed = false;      // the definition's HELP and TYPE are out
    std::string after;        // the last series of the definition out ("": none yet)
    bool histograms = false;  // on to the definition's histogram series
  };
  bool RenderSome(std::string& out, RenderPosition& at, size_t max_series) const;
  // Series kept (a histogram's counts as one).
  size_t series_count() const { return values_.size() + histograms_.size(); }

 private:
  struct HistogramSeries {
    std::vector<double> counts;  // per bucket, cumulative at render time
    double sum = 0;
    double count = 0;
  };
  // Writes the series `name{labels}` (labels escaped) to series_ and returns it: the key of
  // values_ and histograms_. Reuses one buffer, so a series seen before costs no allocation.
  std::string_view SeriesKey(std::string_view name, const Labels& labels) const;
  double ValueOf(std::string_view name, const Labels& labels) const;
  // Adds `by` to totals_ and, for a counter summed by a label, to that label's value's sum.
  void AddToTotals(CounterId id, const Labels& labels, double by);

  struct Sample {
    double value = 0;
  };
  mutable std::string series_;
  std::map<std::string, Sample, std::less<>> values_;
  std::array<double, static_cast<size_t>(CounterId::kMaxValue) + 1> totals_{};  // by CounterId
  // By CounterId: for those summed by a label, the sums by its value as given (not redacted).
  std::array<std::map<std::string, double, std::less<>>,
             static_cast<size_t>(CounterId::kMaxValue) + 1>
      totals_by_;
  std::map<std::string, HistogramSeries, std::less<>> histograms_;
};

}  // namespace egress::service
