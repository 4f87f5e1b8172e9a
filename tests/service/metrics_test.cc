// Metrics: typed ids, the series they write and the exposition text /metrics serves.

#include "dispatcher/service/metrics.h"

#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dispatcher/base/redact.h"
#include "dispatcher/base/utf8.h"

namespace egress::service {
namespace {

// The text the name-addressed Metrics rendered for the same calls, before ids replaced names,
// with the metrics added since (@VERSION@: the build's): the exposition format is a contract
// (dashboards, `promtool check metrics`).
constexpr std::string_view kExpected =
    R"txt(# HELP relay_egress_deliveries_accepted_total Deliveries made durable by intake, by tenant and platform.
# TYPE relay_egress_deliveries_accepted_total counter
relay_egress_deliveries_accepted_total{tenant="a\"b\\c\\x0ad",platform="slack"} 3
# HELP relay_egress_deliveries_total Attempts that ended a delivery or deferred it, by platform, outcome and priority.
# TYPE relay_egress_deliveries_total counter
relay_egress_deliveries_total{platform="slack",outcome="dead"} 1
relay_egress_deliveries_total{platform="webhook",outcome="delivered"} 2
# HELP relay_egress_deferrals_total Deliveries deferred, by tenant, platform and reason.
# TYPE relay_egress_deferrals_total counter
relay_egress_deferrals_total{tenant="acme",platform="webhook",reason="budget:webhook_destination"} 1
# HELP relay_egress_throttles_total Platform throttles (429 or body throttle) received, by tenant, platform and reason.
# TYPE relay_egress_throttles_total counter
# HELP relay_egress_platform_responses_total Responses platforms and receivers gave to delivery attempts, by platform and code_class (1xx, 2xx, 3xx, 429, 4xx other than 429, 5xx; error: no HTTP answer).
# TYPE relay_egress_platform_responses_total counter
relay_egress_platform_responses_total{platform="discord",code_class="429"} 1
# HELP relay_egress_platform_429_total Deprecated (removed in the next release): use relay_egress_platform_responses_total{code_class="429"}. HTTP 429 responses received, by platform.
# TYPE relay_egress_platform_429_total counter
relay_egress_platform_429_total{platform="discord"} 1
# HELP relay_egress_budget_near_limit_total Units dispatched attempts took from a scope already at 80% or more of its budget over its last minute, by tenant and budget (Envoy's near_limit).
# TYPE relay_egress_budget_near_limit_total counter
# HELP relay_egress_sends_held_total Requests held before they left, by platform: the one before on their destination's key left late (a slow store write, a wait for a connection or a token), and sent as soon as let go they would have reached the platform closer together than its budget.
# TYPE relay_egress_sends_held_total counter
# HELP relay_egress_shadow_checked_total Dispatches metered by a tenant's shadow limit (a rate limit with mode shadow: counted, never enforced), by tenant and budget.
# TYPE relay_egress_shadow_checked_total counter
# HELP relay_egress_shadow_throttled_total Of those, the dispatches the shadow limit would have throttled (they went all the same), by tenant and budget.
# TYPE relay_egress_shadow_throttled_total counter
# HELP relay_egress_intake_rejections_total Intake requests refused, by tenant and reason (rate_limited, backlog, invalid, ...).
# TYPE relay_egress_intake_rejections_total counter
# HELP relay_egress_queue_depth Deliveries per state, from the store's counters at each scrape.
# TYPE relay_egress_queue_depth gauge
relay_egress_queue_depth{state="queued"} 12
# HELP relay_egress_bucket_fill_ratio How full a destination's platform bucket was when it answered (1 = exhausted).
# TYPE relay_egress_bucket_fill_ratio histogram
relay_egress_bucket_fill_ratio_bucket{platform="slack",le="0"} 0
relay_egress_bucket_fill_ratio_bucket{platform="slack",le="0.25"} 0
relay_egress_bucket_fill_ratio_bucket{platform="slack",le="0.5"} 0
relay_egress_bucket_fill_ratio_bucket{platform="slack",le="0.75"} 0
relay_egress_bucket_fill_ratio_bucket{platform="slack",le="0.9"} 1
relay_egress_bucket_fill_ratio_bucket{platform="slack",le="1"} 1
relay_egress_bucket_fill_ratio_bucket{platform="slack",le="+Inf"} 1
relay_egress_bucket_fill_ratio_sum{platform="slack"} 0.8
relay_egress_bucket_fill_ratio_count{platform="slack"} 1
# HELP relay_egress_attempt_duration_seconds Request to response time of delivery attempts, by platform.
# TYPE relay_egress_attempt_duration_seconds histogram
relay_egress_attempt_duration_seconds_bucket{le="0.005"} 1
relay_egress_attempt_duration_seconds_bucket{le="0.01"} 1
relay_egress_attempt_duration_seconds_bucket{le="0.025"} 1
relay_egress_attempt_duration_seconds_bucket{le="0.05"} 1
relay_egress_attempt_duration_seconds_bucket{le="0.1"} 1
relay_egress_attempt_duration_seconds_bucket{le="0.25"} 1
relay_egress_attempt_duration_seconds_bucket{le="0.5"} 1
relay_egress_attempt_duration_seconds_bucket{le="1"} 1
relay_egress_attempt_duration_seconds_bucket{le="2.5"} 1
relay_egress_attempt_duration_seconds_bucket{le="5"} 1
relay_egress_attempt_duration_seconds_bucket{le="10"} 1
relay_egress_attempt_duration_seconds_bucket{le="30"} 1
relay_egress_attempt_duration_seconds_bucket{le="+Inf"} 1
relay_egress_attempt_duration_seconds_sum 0.001
relay_egress_attempt_duration_seconds_count 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="0.005"} 0
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="0.01"} 0
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="0.025"} 0
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="0.05"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="0.1"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="0.25"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="0.5"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="1"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="2.5"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="5"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="10"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="30"} 1
relay_egress_attempt_duration_seconds_bucket{platform="webhook",le="+Inf"} 2
relay_egress_attempt_duration_seconds_sum{platform="webhook"} 40.03
relay_egress_attempt_duration_seconds_count{platform="webhook"} 2
# HELP relay_egress_destinations Destinations with work, known to the scheduler.
# TYPE relay_egress_destinations gauge
relay_egress_destinations 7
# HELP relay_egress_pauses Operator pauses in force (POST /api/admin/pauses).
# TYPE relay_egress_pauses gauge
# HELP relay_egress_paused Destinations with work this node holds under a pause, by tenant and platform (their deliveries wait, deferred with reason paused).
# TYPE relay_egress_paused gauge
# HELP relay_egress_store_errors_total Store calls that failed, by operation: the delivery loop's lease, read, outcome and scan (retried), outcome_refused (refused for good), outcome_fenced (the shard went to another node meanwhile); purge (a retention pass).
# TYPE relay_egress_store_errors_total counter
relay_egress_store_errors_total{operation="outcome"} 1
# HELP relay_egress_store_healthy 1 while the store takes writes; 0 after a write or background fault until it recovers.
# TYPE relay_egress_store_healthy gauge
relay_egress_store_healthy 0
# HELP relay_egress_budget_store_up 1 while the shared budget store ([cluster] Redis or DynamoDB) answers, or when budgets are in memory; 0 while it cannot be reached (on_budget_store_down applies).
# TYPE relay_egress_budget_store_up gauge
# HELP relay_egress_learned_updates_total What responses taught (learned limits, adaptive paces, Discord buckets) shared with the other [cluster] nodes through the budget store, by direction: published, applied (another node's), dropped (the store was away or the batch full), rejected (an entry that did not decode).
# TYPE relay_egress_learned_updates_total counter
# HELP relay_egress_store_memory_bytes Memory the store holds in this process, by part: memtables (write buffers, flushed past store.memtable_mb), table_readers (index blocks of open table files), block_cache (at most store.block_cache_mb), record_cache (waiting records kept beside the disk); at each scrape, 0 for PostgreSQL.
# TYPE relay_egress_store_memory_bytes gauge
# HELP relay_egress_store_shards_held Shards of the shared PostgreSQL store whose destinations this node dispatches (their leases held); absent with the embedded store.
# TYPE relay_egress_store_shards_held gauge
# HELP relay_egress_corrupt_records_total Stored records that could not be read and were moved to dead (reason corrupt_record).
# TYPE relay_egress_corrupt_records_total counter
relay_egress_corrupt_records_total 2
# HELP relay_egress_auth_failures_total API requests refused by authentication, by reason: missing (no key), unknown (a wrong key or token), over_budget (the source address is over server.auth_failure_budget).
# TYPE relay_egress_auth_failures_total counter
# HELP relay_egress_discord_invalid_request_stops_total Times a Discord token was stopped near the invalid-request ban line, by credential.
# TYPE relay_egress_discord_invalid_request_stops_total counter
# HELP relay_egress_purged_total Finished deliveries removed by retention, with their payloads and index entries, by state (delivered, cancelled, dead).
# TYPE relay_egress_purged_total counter
relay_egress_purged_total{state="dead"} 2
# HELP relay_egress_idempotency_keys_expired_total Idempotency keys released by retention while their delivery's record stays (a key removed with its record is counted in relay_egress_purged_total only).
# TYPE relay_egress_idempotency_keys_expired_total counter
# HELP relay_egress_store_bytes Bytes the store takes on disk (every file in its directory), after the last retention pass.
# TYPE relay_egress_store_bytes gauge
relay_egress_store_bytes 4096
# HELP relay_egress_http_connections Connections open to the HTTP API.
# TYPE relay_egress_http_connections gauge
relay_egress_http_connections 3
# HELP relay_egress_metrics_text_kept_seconds How long the last /metrics text made is answered, from when its making began: a hundred times the CPU time making it took (its gzip's too, once a scrape asked for it; sending it is metered apart), from 1 to 10 s. A scrape's values are up to this old (its Age header says how old). Absent until a text is made.
# TYPE relay_egress_metrics_text_kept_seconds gauge
# HELP relay_egress_metrics_text_made_timestamp_seconds When this /metrics text was begun, in Unix seconds: every scrape that is answered the same text shows the same time (rates of its counters are over the times of two texts).
# TYPE relay_egress_metrics_text_made_timestamp_seconds gauge
# HELP relay_egress_build_info Always 1; the version of the running build is its label.
# TYPE relay_egress_build_info gauge
relay_egress_build_info{version="@VERSION@"} 1
# HELP relay_egress_http_connections_refused_total Connections closed as they arrived, by reason (max_connections: every slot and health slot taken; per_address: over server.max_connections_per_address).
# TYPE relay_egress_http_connections_refused_total counter
relay_egress_http_connections_refused_total{reason="per_address"} 5
# HELP relay_egress_http_accept_failures_total Times accept() failed (out of file descriptors or memory); the server waits and tries again.
# TYPE relay_egress_http_accept_failures_total counter
# HELP relay_egress_http_timeouts_total Connections closed by a deadline, by direction (header: stalled within a request's header; read: within its body; write: not reading its answer).
# TYPE relay_egress_http_timeouts_total counter
relay_egress_http_timeouts_total{direction="read"} 2
# HELP relay_egress_access_token_fetches_total OAuth2 access tokens fetched for a profile platform's credentials (result ok or error; docs/platforms.md, "Profile platforms").
# TYPE relay_egress_access_token_fetches_total counter
# HELP relay_egress_http_busy_total Requests answered 503 server_busy: the bytes of request bodies (in all, or of one tenant or address) or of headers held at once were at their budget.
# TYPE relay_egress_http_busy_total counter
# HELP relay_egress_connections_opened_total Outbound connections opened to platforms and webhook receivers (each with its TLS handshake for https); small next to the attempts while connections are reused.
# TYPE relay_egress_connections_opened_total counter
relay_egress_connections_opened_total 4
# HELP relay_egress_quota_rejections_total Deliveries (or batch items) refused at intake with quota_exceeded, by tenant and quota.
# TYPE relay_egress_quota_rejections_total counter
relay_egress_quota_rejections_total{tenant="acme",quota="monthly"} 1
# HELP relay_egress_quota_shadow_rejections_total Deliveries (or batch items) a shadow quota (mode shadow) would have refused at intake and that were accepted, by tenant and quota.
# TYPE relay_egress_quota_shadow_rejections_total counter
)txt";

// The collected families of the same tenant, as GET /metrics writes them.
constexpr std::string_view kCollected =
    R"txt(# HELP relay_egress_budget_units_total Units (delivery cost) taken from budgets by dispatched attempts, by tenant and budget (every budget on the destination's path).
# TYPE relay_egress_budget_units_total counter
relay_egress_budget_units_total{tenant="acme",budget="tenant_egress"} 5
# HELP relay_egress_budget_utilization_ratio Units a tenant took from a budget over the last minute divided by that budget for a minute; of the tenant's scopes of the budget (one per credential or destination), the busiest.
# TYPE relay_egress_budget_utilization_ratio gauge
relay_egress_budget_utilization_ratio{tenant="acme",budget="discord_global"} 0.25
# HELP relay_egress_tenant_queue_depth Deliveries waiting or in flight, by tenant, platform and state (queued, in_flight, deferred), from the store's counters at each scrape.
# TYPE relay_egress_tenant_queue_depth gauge
relay_egress_tenant_queue_depth{tenant="acme",platform="slack",state="deferred"} 2
# HELP relay_egress_oldest_deferral_age_seconds Age of the oldest deferred delivery the delivery loop holds, by tenant and platform, at each scrape.
# TYPE relay_egress_oldest_deferral_age_seconds gauge
relay_egress_oldest_deferral_age_seconds{tenant="acme",platform="slack"} 90.5
# HELP relay_egress_quota_used_ratio Units counted in a tenant's quota window over its limit (1 = exhausted), by tenant and quota, at scrape time.
# TYPE relay_egress_quota_used_ratio gauge
relay_egress_quota_used_ratio{tenant="acme",quota="monthly"} 0.5
# HELP relay_egress_tier_utilization_ratio Per tier and quota (label budget): units counted over the sum of limits of the tier's tenants that have that quota, at scrape time.
# TYPE relay_egress_tier_utilization_ratio gauge
relay_egress_tier_utilization_ratio{tier="pro",budget="monthly"} 0.25
)txt";

void Record(Metrics& m) {
  m.Inc(CounterId::kDeliveries, {{"platform", "webhook"}, {"outcome", "delivered"}});
  m.Inc(CounterId::kDeliveries, {{"platform", "webhook"}, {"outcome", "delivered"}});
  m.Inc(CounterId::kDeliveries, {{"platform", "slack"}, {"outcome", "dead"}});
  m.Inc(CounterId::kDeliveriesAccepted, {{"tenant", "a\"b\\c\nd"}, {"platform", "slack"}}, 3);
  m.Inc(CounterId::kDeferrals,
        {{"tenant", "acme"}, {"platform", "webhook"}, {"reason", "budget:webhook_destination"}});
  m.Inc(CounterId::kPlatform429, {{"platform", "discord"}});
  m.Inc(CounterId::kPlatformResponses, {{"platform", "discord"}, {"code_class", "429"}});
  m.Set(GaugeId::kDestinations, {}, 7);
  m.Set(GaugeId::kQueueDepth, {{"state", "queued"}}, 12);
  m.Set(GaugeId::kHttpConnections, {}, 3);
  m.SetTotal(CounterId::kHttpConnectionsRefused, {{"reason", "per_address"}}, 4);
  // A mirrored count replaces, not adds.
  m.SetTotal(CounterId::kHttpConnectionsRefused, {{"reason", "per_address"}}, 5);
  m.SetTotal(CounterId::kHttpTimeouts, {{"direction", "read"}}, 2);
  m.Observe(HistogramId::kBucketFillRatio, {{"platform", "slack"}}, 0.8);
  m.Observe(HistogramId::kAttemptDuration, {{"platform", "webhook"}}, 0.03);
  m.Observe(HistogramId::kAttemptDuration, {{"platform", "webhook"}}, 40);
  m.Observe(HistogramId::kAttemptDuration, {}, 0.001);
  m.Inc(CounterId::kStoreErrors, {{"operation", "outcome"}});
  m.Inc(CounterId::kPurged, {{"state", "dead"}}, 2);
  m.Set(GaugeId::kStoreBytes, {}, 4096);
  m.Set(GaugeId::kStoreHealthy, {}, 0);
  m.Inc(CounterId::kCorruptRecords, {}, 2);
  m.SetTotal(CounterId::kConnectionsOpened, {}, 4);
  m.Inc(CounterId::kQuotaRejections, {{"tenant", "acme"}, {"quota", "monthly"}});
}

// Verifies that the rendered text is byte for byte what it was: order, escaping, histograms.
TEST(MetricsTest, RendersTheExpositionText) {
  Metrics m;
  Record(m);
  std::string expected(kExpected);
  expected.replace(expected.find("@VERSION@"), 9, Metrics::Version());
  EXPECT_EQ(m.Render(), expected);
}

// Verifies the text rendered in steps (as GET /metrics does) is the text rendered at once, for
// any step, and that series added between steps appear where the walk has not passed yet.
TEST(MetricsTest, RendersInStepsTheSameText) {
  Metrics m;
  Record(m);
  const std::string whole = m.Render();
  for (size_t step : {1u, 2u, 3u, 7u, 100u}) {
    SCOPED_TRACE(step);
    std::string out;
    Metrics::RenderPosition at;
    int steps = 0;
    while (!m.RenderSome(out, at, step)) {
      ASSERT_LT(++steps, 1000);
    }
    EXPECT_EQ(out, whole);
  }
  std::string out;
  Metrics::RenderPosition at;
  ASSERT_FALSE(m.RenderSome(out, at, 1));  // build_info only
  m.Inc(CounterId::kDeliveries, {{"platform", "line"}, {"outcome", "delivered"}});
  while (!m.RenderSome(out, at, 1)) {
  }
  EXPECT_NE(out.find(R"(relay_egress_deliveries_total{platform="line",outcome="delivered"} 1)"),
            std::string::npos)
      << out;
}

// Verifies each value reads as fmt's shortest round-trip form of it, the integers written by the
// render's own fast path included (its bounds, negative zero and the values it leaves to fmt).
TEST(MetricsTest, RendersValuesAsFmtDoes) {
  const double values[] = {0,
                           -0.0,
                           1,
                           -1,
                           3,
                           0.25,
                           -2.5,
                           12345678,
                           999999999999999,
                           1e15,
                           -1e15,
                           9007199254740992.0,
                           1e20,
                           1e-7,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};
  Metrics m;
  for (size_t i = 0; i < std::size(values); ++i) {
    m.Set(GaugeId::kQueueDepth, {{"state", std::to_string(i)}}, values[i]);
  }
  const std::string text = m.Render();
  for (size_t i = 0; i < std::size(values); ++i) {
    SCOPED_TRACE(values[i]);
    const std::string line =
        fmt::format("relay_egress_queue_depth{{state=\"{}\"}} {}\n", i, values[i]);
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

// Verifies that Value reads one series, Total sums a counter's series and not a longer name's.
TEST(MetricsTest, ValueAndTotal) {
  Metrics m;
  Record(m);
  EXPECT_EQ(m.Value(CounterId::kDeliveries, {{"platform", "webhook"}, {"outcome", "delivered"}}),
            2);
  EXPECT_EQ(m.Value(CounterId::kDeliveries, {{"platform", "line"}, {"outcome", "delivered"}}), 0);
  EXPECT_EQ(m.Value(GaugeId::kDestinations), 7);
  EXPECT_EQ(m.Total(CounterId::kDeliveries), 3);
  EXPECT_EQ(m.Total(CounterId::kDeferrals), 1);
  EXPECT_EQ(m.Total(CounterId::kThrottles), 0);
  // A mirrored total counts once however often it is set; Inc adds to it.
  m.SetTotal(CounterId::kHttpBusy, {}, 5);
  m.SetTotal(CounterId::kHttpBusy, {}, 7);
  EXPECT_EQ(m.Total(CounterId::kHttpBusy), 7);
  m.Inc(CounterId::kHttpBusy, {}, 2);
  m.SetTotal(CounterId::kHttpTimeouts, {{"direction", "read"}}, 4);
  m.SetTotal(CounterId::kHttpTimeouts, {{"direction", "write"}}, 1);
  m.SetTotal(CounterId::kHttpTimeouts, {{"direction", "read"}}, 6);
  EXPECT_EQ(m.Total(CounterId::kHttpBusy), 9);
  EXPECT_EQ(m.Total(CounterId::kHttpTimeouts), 7);
  m.Set(GaugeId::kDestinations, {}, 2);
  EXPECT_EQ(m.Value(GaugeId::kDestinations), 2);
}

// Verifies the sums by one label GET /v1/stats shows: deferrals by reason over every tenant,
// attempts by outcome, kept through mirrored totals; a value shows as the text shows it
// (redacted), and values that redact alike are one.
TEST(MetricsTest, TotalsByALabel) {
  Metrics m;
  m.Inc(CounterId::kDeferrals, {{"tenant", "a"}, {"platform", "slack"}, {"reason", "backoff"}});
  m.Inc(CounterId::kDeferrals, {{"tenant", "b"}, {"platform", "line"}, {"reason", "backoff"}}, 2);
  m.Inc(CounterId::kDeferrals, {{"tenant", "b"}, {"platform", "line"}, {"reason", "retry_after"}});
  m.Inc(CounterId::kDeferrals,
        {{"tenant", "c"}, {"platform", "webhook"}, {"reason", "bot1%3As3cr3t-one"}});
  m.Inc(CounterId::kDeferrals,
        {{"tenant", "c"}, {"platform", "webhook"}, {"reason", "bot1%3As3cr3t-two"}});
  const std::map<std::string, double> reasons = m.TotalsBy(CounterId::kDeferrals);
  EXPECT_EQ(reasons, (std::map<std::string, double>{
                         {"backoff", 3}, {"bot\xe2\x80\xa6", 2}, {"retry_after", 1}}));
  m.SetTotal(CounterId::kDeliveries, {{"platform", "slack"}, {"outcome", "delivered"}}, 5);
  m.SetTotal(CounterId::kDeliveries, {{"platform", "slack"}, {"outcome", "delivered"}}, 8);
  m.Inc(CounterId::kDeliveries, {{"platform", "line"}, {"outcome", "delivered"}});
  m.Inc(CounterId::kDeliveries, {{"platform", "line"}, {"outcome", "dead"}});
  EXPECT_EQ(m.TotalsBy(CounterId::kDeliveries),
            (std::map<std::string, double>{{"dead", 1}, {"delivered", 9}}));
}

// Verifies that Clear drops every series of one gauge (and only of that gauge), and that a
// fresh Metrics holds relay_egress_build_info{version} at 1.
TEST(MetricsTest, ClearDropsOneGaugesSeries) {
  Metrics m;
  m.Set(GaugeId::kPaused, {{"tenant", "a"}, {"platform", "slack"}}, 3);
  m.Set(GaugeId::kPaused, {{"tenant", "b"}, {"platform", "slack"}}, 4);
  m.Set(GaugeId::kQueueDepth, {{"state", "queued"}}, 7);
  m.Clear(GaugeId::kPaused);
  const std::string text = m.Render();
  EXPECT_EQ(text.find("relay_egress_paused{"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE relay_egress_paused gauge"), std::string::npos);
  EXPECT_EQ(m.Value(GaugeId::kQueueDepth, {{"state", "queued"}}), 7);
  EXPECT_EQ(m.Value(GaugeId::kBuildInfo, {{"version", Metrics::Version()}}), 1);
  EXPECT_FALSE(Metrics::Version().empty());
  EXPECT_NE(Metrics::Version(), "unknown");
}

// Verifies that a label value that is not UTF-8 (a tenant named in a URL path may hold any
// bytes) leaves as valid UTF-8, each bad byte one U+FFFD: Prometheus refuses a whole scrape
// over one bad label value.
TEST(MetricsTest, LabelValuesLeaveAsUtf8) {
  Metrics m;
  m.Set(GaugeId::kPaused, {{"tenant", "ac\xffme"}, {"platform", "caf\xc3\xa9"}}, 2);
  const std::string text = m.Render();
  EXPECT_NE(
      text.find("relay_egress_paused{tenant=\"ac\xef\xbf\xbdme\",platform=\"caf\xc3\xa9\"} 2"),
      std::string::npos)
      << text;
  std::string collected;
  Metrics::AppendSample(collected, GaugeId::kQuotaUsedRatio,
                        {{"tenant", "ac\xffme"}, {"quota", "caf\xc3\xa9"}}, 0.5);
  EXPECT_EQ(
      collected,
      "relay_egress_quota_used_ratio{tenant=\"ac\xef\xbf\xbdme\",quota=\"caf\xc3\xa9\"} 0.5\n");
}

// Verifies that every label value is written as the redaction layer shows it, escaped, whether
// it takes the plain path or not: each byte the plain path leaves out alone, secrets, UTF-8 and
// bytes that are not; a URL's secret query never leaves.
TEST(MetricsTest, LabelValuesAreRedactedAndEscapedOnEveryPath) {
  std::vector<std::string> values = {"t0_x-Y.z 9",
                                     "caf\xc3\xa9",
                                     "ac\xffme",
                                     "https://hooks.example/in?token=s3cr3t-value",
                                     "/bot12:s3cr3t-value/send",
                                     "a\nb\\c\"d",
                                     "webhooks/1/s3cr3t-value",
                                     "bot12:s3cr3t-value",
                                     "bot12%3As3cr3t-value",
                                     "bot12%3as3cr3t-value"};
  for (int c = 0; c < 256; ++c) {
    values.push_back("x" + std::string(1, static_cast<char>(c)) + "y");
  }
  for (const std::string& v : values) {
    std::string expected;
    for (char c : ToValidUtf8(RedactText(v))) {
      if (c == '\\' || c == '"') {
        expected.push_back('\\');
      }
      expected.push_back(c);
    }
    std::string out;
    Metrics::AppendSample(out, GaugeId::kQuotaUsedRatio, {{"tenant", v}, {"quota", "q"}}, 1);
    EXPECT_EQ(out, "relay_egress_quota_used_ratio{tenant=\"" + expected + "\",quota=\"q\"} 1\n")
        << "value of " << v.size() << " bytes: " << DestinationKeyText(v);
    EXPECT_EQ(out.find("s3cr3t-value"), std::string::npos) << out;
  }
}

// Verifies that the families GET /metrics collects at each scrape are written by AppendHead and
// AppendSample as Render writes the rest (HELP, TYPE, escaping, values), that Render leaves
// them out, and that keeping a series of one is refused (it would never be shown).
TEST(MetricsTest, CollectedFamiliesAreWrittenAsTheRest) {
  std::string out;
  Metrics::AppendHead(out, CounterId::kBudgetUnits);
  Metrics::AppendSample(out, CounterId::kBudgetUnits,
                        {{"tenant", "acme"}, {"budget", "tenant_egress"}}, 5);
  Metrics::AppendHead(out, GaugeId::kBudgetUtilization);
  Metrics::AppendSample(out, GaugeId::kBudgetUtilization,
                        {{"tenant", "acme"}, {"budget", "discord_global"}}, 0.25);
  Metrics::AppendHead(out, GaugeId::kTenantQueueDepth);
  Metrics::AppendSample(out, GaugeId::kTenantQueueDepth,
                        {{"tenant", "acme"}, {"platform", "slack"}, {"state", "deferred"}}, 2);
  Metrics::AppendHead(out, GaugeId::kOldestDeferralAge);
  Metrics::AppendSample(out, GaugeId::kOldestDeferralAge,
                        {{"tenant", "acme"}, {"platform", "slack"}}, 90.5);
  Metrics::AppendHead(out, GaugeId::kQuotaUsedRatio);
  Metrics::AppendSample(out, GaugeId::kQuotaUsedRatio, {{"tenant", "acme"}, {"quota", "monthly"}},
                        0.5);
  Metrics::AppendHead(out, GaugeId::kTierUtilization);
  Metrics::AppendSample(out, GaugeId::kTierUtilization, {{"tier", "pro"}, {"budget", "monthly"}},
                        0.25);
  EXPECT_EQ(out, kCollected);
  EXPECT_TRUE(Metrics::IsCollected(GaugeId::kTenantQueueDepth));
  EXPECT_FALSE(Metrics::IsCollected(GaugeId::kQueueDepth));
  EXPECT_FALSE(Metrics::IsCollected(CounterId::kBudgetNearLimit));
  const std::string text = Metrics().Render();
  for (std::string_view family :
       {"relay_egress_budget_units_total", "relay_egress_budget_utilization_ratio",
        "relay_egress_tenant_queue_depth", "relay_egress_oldest_deferral_age_seconds",
        "relay_egress_quota_used_ratio", "relay_egress_tier_utilization_ratio"}) {
    EXPECT_EQ(text.find(family), std::string::npos) << family;
  }
  EXPECT_DEATH(Metrics().Set(GaugeId::kTenantQueueDepth, {{"tenant", "a"}}, 1), "EGRESS_CHECK");
  EXPECT_DEATH(Metrics().SetTotal(CounterId::kBudgetUnits, {{"tenant", "a"}}, 1), "EGRESS_CHECK");
}

// Verifies that every id names a distinct relay_egress_ metric, and a few by name.
// Verifies that Erase drops one series of a gauge and leaves the others (and a series it never
// had is no error).
TEST(MetricsTest, EraseDropsOneSeries) {
  Metrics m;
  m.Set(GaugeId::kPaused, {{"tenant", "a"}, {"platform", "slack"}}, 2);
  m.Set(GaugeId::kPaused, {{"tenant", "b"}, {"platform", "slack"}}, 1);
  m.Erase(GaugeId::kPaused, {{"tenant", "a"}, {"platform", "slack"}});
  m.Erase(GaugeId::kPaused, {{"tenant", "c"}, {"platform", "line"}});
  const std::string text = m.Render();
  EXPECT_EQ(text.find("tenant=\"a\""), std::string::npos) << text;
  EXPECT_NE(text.find("relay_egress_paused{tenant=\"b\",platform=\"slack\"} 1"), std::string::npos)
      << text;
}

TEST(MetricsTest, EveryIdHasItsOwnName) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(CounterId::kMaxValue); ++i) {
    names.insert(Metrics::Name(static_cast<CounterId>(i)));
  }
  for (int i = 0; i <= static_cast<int>(GaugeId::kMaxValue); ++i) {
    names.insert(Metrics::Name(static_cast<GaugeId>(i)));
  }
  for (int i = 0; i <= static_cast<int>(HistogramId::kMaxValue); ++i) {
    names.insert(Metrics::Name(static_cast<HistogramId>(i)));
  }
  EXPECT_EQ(names.size(), 47u);
  for (std::string_view name : names) {
    EXPECT_TRUE(name.starts_with("relay_egress_")) << name;
  }
  EXPECT_EQ(Metrics::Name(CounterId::kDeliveries), "relay_egress_deliveries_total");
  EXPECT_EQ(Metrics::Name(GaugeId::kHttpConnections), "relay_egress_http_connections");
  EXPECT_EQ(Metrics::Name(HistogramId::kAttemptDuration), "relay_egress_attempt_duration_seconds");
  EXPECT_EQ(Metrics::Name(CounterId::kPurged), "relay_egress_purged_total");
  EXPECT_EQ(Metrics::Name(GaugeId::kStoreBytes), "relay_egress_store_bytes");
  EXPECT_EQ(Metrics::Name(GaugeId::kTierUtilization), "relay_egress_tier_utilization_ratio");
  EXPECT_EQ(Metrics::Name(GaugeId::kPaused), "relay_egress_paused");
  EXPECT_EQ(Metrics::Name(GaugeId::kPauses), "relay_egress_pauses");
}

}  // namespace
}  // namespace egress::service
