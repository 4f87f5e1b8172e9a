#include "dispatcher/service/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>

#include <fmt/format.h>

#include "dispatcher/base/check.h"
#include "dispatcher/base/redact.h"
#include "dispatcher/base/utf8.h"
#include "dispatcher/base/version.h"

namespace egress::service {
namespace {

enum class Type { kCounter, kGauge, kHistogram };

struct Definition {
  std::string_view name;
  Type type;
  uint8_t id;  // the CounterId, GaugeId or HistogramId
  std::string_view help;
  std::span<const double> buckets = {};  // histograms only
};

constexpr std::array<double, 12> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,    2.5,   5,    10,  30};
constexpr std::array<double, 6> kFillBuckets = {0, 0.25, 0.5, 0.75, 0.9, 1};

constexpr Definition CounterRow(CounterId id, std::string_view name, std::string_view help) {
  return {name, Type::kCounter, static_cast<uint8_t>(id), help};
}
constexpr Definition GaugeRow(GaugeId id, std::string_view name, std::string_view help) {
  return {name, Type::kGauge, static_cast<uint8_t>(id), help};
}
constexpr Definition HistogramRow(HistogramId id, std::string_view name, std::string_view help,
                                  std::span<const double> buckets) {
  return {name, Type::kHistogram, static_cast<uint8_t>(id), help, buckets};
}

// Every metric, once, in the order /metrics renders them.
constexpr Definition kDefinitions[] = {
    CounterRow(CounterId::kDeliveriesAccepted, "relay_egress_deliveries_accepted_total",
               "Deliveries made durable by intake, by tenant and platform."),
    CounterRow(CounterId::kDeliveries, "relay_egress_deliveries_total",
               "Attempts that ended a delivery or deferred it, by platform, outcome and "
               "priority."),
    CounterRow(CounterId::kDeferrals, "relay_egress_deferrals_total",
               "Deliveries deferred, by tenant, platform and reason."),
    CounterRow(CounterId::kThrottles, "relay_egress_throttles_total",
               "Platform throttles (429 or body throttle) received, by tenant, platform and "
               "reason."),
    CounterRow(CounterId::kPlatformResponses, "relay_egress_platform_responses_total",
               "Responses platforms and receivers gave to delivery attempts, by platform and "
               "code_class (1xx, 2xx, 3xx, 429, 4xx other than 429, 5xx; error: no HTTP answer)."),
    CounterRow(CounterId::kPlatform429, "relay_egress_platform_429_total",
               "Deprecated (removed in the next release): use "
               "relay_egress_platform_responses_total{code_class=\"429\"}. HTTP 429 responses "
               "received, by platform."),
    CounterRow(CounterId::kBudgetUnits, "relay_egress_budget_units_total",
               "Units (delivery cost) taken from budgets by dispatched attempts, by tenant and "
               "budget (every budget on the destination's path)."),
    CounterRow(CounterId::kBudgetNearLimit, "relay_egress_budget_near_limit_total",
               "Units dispatched attempts took from a scope already at 80% or more of its budget "
               "over its last minute, by tenant and budget (Envoy's near_limit)."),
    CounterRow(CounterId::kSendsHeld, "relay_egress_sends_held_total",
               "Requests held before they left, by platform: the one before on their "
               "destination's key left late (a slow store write, a wait for a connection or a "
               "token), and sent as soon as let go they would have reached the platform closer "
               "together than its budget."),
    CounterRow(CounterId::kShadowChecked, "relay_egress_shadow_checked_total",
               "Dispatches metered by a tenant's shadow limit (a rate limit with mode shadow: "
               "counted, never enforced), by tenant and budget."),
    CounterRow(CounterId::kShadowThrottled, "relay_egress_shadow_throttled_total",
               "Of those, the dispatches the shadow limit would have throttled (they went all "
               "the same), by tenant and budget."),
    GaugeRow(GaugeId::kBudgetUtilization, "relay_egress_budget_utilization_ratio",
             "Units a tenant took from a budget over the last minute divided by that budget for "
             "a minute; of the tenant's scopes of the budget (one per credential or destination), "
             "the busiest."),
    CounterRow(CounterId::kIntakeRejections, "relay_egress_intake_rejections_total",
               "Intake requests refused, by tenant and reason (rate_limited, backlog, invalid, "
               "...)."),
    GaugeRow(GaugeId::kQueueDepth, "relay_egress_queue_depth",
             "Deliveries per state, from the store's counters at each scrape."),
    GaugeRow(GaugeId::kTenantQueueDepth, "relay_egress_tenant_queue_depth",
             "Deliveries waiting or in flight, by tenant, platform and state (queued, in_flight, "
             "deferred), from the store's counters at each scrape."),
    GaugeRow(GaugeId::kOldestDeferralAge, "relay_egress_oldest_deferral_age_seconds",
             "Age of the oldest deferred delivery the delivery loop holds, by tenant and "
             "platform, at each scrape."),
    HistogramRow(HistogramId::kBucketFillRatio, "relay_egress_bucket_fill_ratio",
                 "How full a destination's platform bucket was when it answered (1 = exhausted).",
                 kFillBuckets),
    HistogramRow(HistogramId::kAttemptDuration, "relay_egress_attempt_duration_seconds",
                 "Request to response time of delivery attempts, by platform.", kLatencyBuckets),
    GaugeRow(GaugeId::kDestinations, "relay_egress_destinations",
             "Destinations with work, known to the scheduler."),
    GaugeRow(GaugeId::kPauses, "relay_egress_pauses",
             "Operator pauses in force (POST /api/admin/pauses)."),
    GaugeRow(GaugeId::kPaused, "relay_egress_paused",
             "Destinations with work this node holds under a pause, by tenant and platform "
             "(their deliveries wait, deferred with reason paused)."),
    CounterRow(
        CounterId::kStoreErrors, "relay_egress_store_errors_total",
        "Store calls that failed, by operation: the delivery loop's lease, read, "
        "outcome and scan (retried), outcome_refused (refused for good), outcome_fenced (the "
        "shard went to another node meanwhile); purge (a retention pass)."),
    GaugeRow(GaugeId::kStoreHealthy, "relay_egress_store_healthy",
             "1 while the store takes writes; 0 after a write or background fault until it "
             "recovers."),
    GaugeRow(GaugeId::kBudgetStoreUp, "relay_egress_budget_store_up",
             "1 while the shared budget store ([cluster] Redis or DynamoDB) answers, or when "
             "budgets are in memory; 0 while it cannot be reached (on_budget_store_down "
             "applies)."),
    CounterRow(CounterId::kLearnedUpdates, "relay_egress_learned_updates_total",
               "What responses taught (learned limits, adaptive paces, Discord buckets) shared "
               "with the other [cluster] nodes through the budget store, by direction: "
               "published, applied (another node's), dropped (the store was away or the "
               "batch full), rejected (an entry that did not decode)."),
    GaugeRow(GaugeId::kStoreMemoryBytes, "relay_egress_store_memory_bytes",
             "Memory the store holds in this process, by part: memtables (write buffers, "
             "flushed past store.memtable_mb), table_readers (index blocks of open table files), "
             "block_cache (at most store.block_cache_mb), record_cache (waiting records kept "
             "beside the disk); at each scrape, 0 for PostgreSQL."),
    GaugeRow(GaugeId::kStoreShardsHeld, "relay_egress_store_shards_held",
             "Shards of the shared PostgreSQL store whose destinations this node dispatches "
             "(their leases held); absent with the embedded store."),
    CounterRow(CounterId::kCorruptRecords, "relay_egress_corrupt_records_total",
               "Stored records that could not be read and were moved to dead (reason "
               "corrupt_record)."),
    CounterRow(CounterId::kAuthFailures, "relay_egress_auth_failures_total",
               "API requests refused by authentication, by reason: missing (no key), unknown "
               "(a wrong key or token), over_budget (the source address is over "
               "server.auth_failure_budget)."),
    CounterRow(CounterId::kDiscordInvalidRequestStops,
               "relay_egress_discord_invalid_request_stops_total",
               "Times a Discord token was stopped near the invalid-request ban line, by "
               "credential."),
    CounterRow(CounterId::kPurged, "relay_egress_purged_total",
               "Finished deliveries removed by retention, with their payloads and index entries, "
               "by state (delivered, cancelled, dead)."),
    CounterRow(CounterId::kIdempotencyKeysExpired, "relay_egress_idempotency_keys_expired_total",
               "Idempotency keys released by retention while their delivery's record stays (a key "
               "removed with its record is counted in relay_egress_purged_total only)."),
    GaugeRow(GaugeId::kStoreBytes, "relay_egress_store_bytes",
             "Bytes the store takes on disk (every file in its directory), after the last "
             "retention pass."),
    GaugeRow(GaugeId::kHttpConnections, "relay_egress_http_connections",
             "Connections open to the HTTP API."),
    GaugeRow(GaugeId::kMetricsTextKept, "relay_egress_metrics_text_kept_seconds",
             "How long the last /metrics text made is answered, from when its making began: a "
             "hundred times the CPU time making it took (its gzip's too, once a scrape asked for "
             "it; sending it is metered apart), from 1 to 10 s. A scrape's values are up to this "
             "old (its Age header says how old). Absent until a text is made."),
    GaugeRow(GaugeId::kMetricsTextMade, "relay_egress_metrics_text_made_timestamp_seconds",
             "When this /metrics text was begun, in Unix seconds: every scrape that is answered "
             "the same text shows the same time (rates of its counters are over the times of "
             "two texts)."),
    GaugeRow(GaugeId::kBuildInfo, "relay_egress_build_info",
             "Always 1; the version of the running build is its label."),
    CounterRow(CounterId::kHttpConnectionsRefused, "relay_egress_http_connections_refused_total",
               "Connections closed as they arrived, by reason (max_connections: every slot and "
               "health slot taken; per_address: over server.max_connections_per_address)."),
    CounterRow(CounterId::kHttpAcceptFailures, "relay_egress_http_accept_failures_total",
               "Times accept() failed (out of file descriptors or memory); the server waits "
               "and tries again."),
    CounterRow(CounterId::kHttpTimeouts, "relay_egress_http_timeouts_total",
               "Connections closed by a deadline, by direction (header: stalled within a "
               "request's header; read: within its body; write: not reading its answer)."),
    CounterRow(CounterId::kAccessTokenFetches, "relay_egress_access_token_fetches_total",
               "OAuth2 access tokens fetched for a profile platform's credentials (result ok or "
               "error; docs/platforms.md, \"Profile platforms\")."),
    CounterRow(CounterId::kHttpBusy, "relay_egress_http_busy_total",
               "Requests answered 503 server_busy: the bytes of request bodies (in all, or of "
               "one tenant or address) or of headers held at once were at their budget."),
    CounterRow(CounterId::kConnectionsOpened, "relay_egress_connections_opened_total",
               "Outbound connections opened to platforms and webhook receivers (each with its "
               "TLS handshake for https); small next to the attempts while connections are "
               "reused."),
    CounterRow(CounterId::kQuotaRejections, "relay_egress_quota_rejections_total",
               "Deliveries (or batch items) refused at intake with quota_exceeded, by tenant and "
               "quota."),
    CounterRow(CounterId::kQuotaShadowRejections, "relay_egress_quota_shadow_rejections_total",
               "Deliveries (or batch items) a shadow quota (mode shadow) would have refused at "
               "intake and that were accepted, by tenant and quota."),
    GaugeRow(GaugeId::kQuotaUsedRatio, "relay_egress_quota_used_ratio",
             "Units counted in a tenant's quota window over its limit (1 = exhausted), by tenant "
             "and quota, at scrape time."),
    GaugeRow(GaugeId::kTierUtilization, "relay_egress_tier_utilization_ratio",
             "Per tier and quota (label budget): units counted over the sum of limits of the "
             "tier's tenants that have that quota, at scrape time."),
};

template <typename Id>
constexpr size_t kIdCount = static_cast<size_t>(Id::kMaxValue) + 1;

// Whether every id of the type has exactly one row (checked at compile time below).
template <typename Id>
constexpr bool EveryIdHasOneRow(Type type) {
  std::array<int, kIdCount<Id>> rows{};
  for (const Definition& d : kDefinitions) {
    if (d.type == type) {
      if (d.id >= rows.size()) {
        return false;
      }
      ++rows[d.id];
    }
  }
  for (int n : rows) {
    if (n != 1) {
      return false;
    }
  }
  return true;
}

constexpr bool NamesAreUnique() {
  for (size_t i = 0; i < std::size(kDefinitions); ++i) {
    for (size_t j = i + 1; j < std::size(kDefinitions); ++j) {
      if (kDefinitions[i].name == kDefinitions[j].name) {
        return false;
      }
    }
  }
  return true;
}

static_assert(EveryIdHasOneRow<CounterId>(Type::kCounter), "each CounterId needs one row");
static_assert(EveryIdHasOneRow<GaugeId>(Type::kGauge), "each GaugeId needs one row");
static_assert(EveryIdHasOneRow<HistogramId>(Type::kHistogram), "each HistogramId needs one row");
static_assert(NamesAreUnique(), "two rows declare one name");

// Row of each id in kDefinitions, by id.
template <typename Id>
constexpr std::array<uint8_t, kIdCount<Id>> RowsOf(Type type) {
  std::array<uint8_t, kIdCount<Id>> rows{};
  for (size_t i = 0; i < std::size(kDefinitions); ++i) {
    if (kDefinitions[i].type == type) {
      rows[kDefinitions[i].id] = static_cast<uint8_t>(i);
    }
  }
  return rows;
}

constexpr auto kCounterRows = RowsOf<CounterId>(Type::kCounter);
constexpr auto kGaugeRows = RowsOf<GaugeId>(Type::kGauge);
constexpr auto kHistogramRows = RowsOf<HistogramId>(Type::kHistogram);

const Definition& Of(CounterId id) { return kDefinitions[kCounterRows[static_cast<size_t>(id)]]; }
const Definition& Of(GaugeId id) { return kDefinitions[kGaugeRows[static_cast<size_t>(id)]]; }
const Definition& Of(HistogramId id) {
  return kDefinitions[kHistogramRows[static_cast<size_t>(id)]];
}

void AppendEscaped(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
}

// A sample's value as the text shows it: fmt's shortest form that reads back the same ("3",
// "0.25", "1e+20", "NaN"), with the integers that nearly every value is (counts, depths) written
// by fmt::format_int, a third of the render's time at 110,000 series with fmt::format_to
// (bench/README.md, section 12).
void AppendSampleValue(std::string& out, double v) {
  constexpr double kExact = 1e15;  // integers below print the same either way
  if (v > -kExact && v < kExact && v == static_cast<double>(static_cast<int64_t>(v)) &&
      !(v == 0 && std::signbit(v))) {
    const fmt::format_int digits(static_cast<int64_t>(v));
    out.append(digits.data(), digits.size());
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", v);
}

// The bytes a label value is written as they are: printable ASCII but for what AppendEscaped
// escapes and MayNeedRedaction looks further at (a value of only these is left as it is by both,
// and is valid UTF-8). Tenant, platform and budget names nearly always are. At 10,000 tenants the
// three checks and the escape a byte at a time were ~14% of the CPU samples of making the text
// (perf; bench/README.md, section 12).
constexpr std::array<bool, 256> kPlainLabelBytes = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x7f; ++c) {
    plain[c] = true;
  }
  for (unsigned char c : std::string_view("\\\"/?@#:%")) {
    plain[c] = false;
  }
  return plain;
}();

bool IsPlainLabelValue(std::string_view v) {
  for (char c : v) {
    if (!kPlainLabelBytes[static_cast<unsigned char>(c)]) {
      return false;
    }
  }
  return true;
}

// A label value as the text shows it, before escaping: through the redaction layer, as valid
// UTF-8.
std::string LabelValueText(std::string_view v) {
  if (!MayNeedRedaction(v) && IsValidUtf8(v)) {
    return std::string(v);
  }
  return ToValidUtf8(RedactText(v));
}

// Appends the series `name{labels}`: what Set keys a series by and the text shows.
void AppendSeries(std::string& out, std::string_view name, const Metrics::Labels& labels) {
  out.append(name);
  if (labels.size() == 0) {
    return;
  }
  char sep = '{';
  for (const auto& [k, v] : labels) {
    out.push_back(sep);
    out.append(k);
    out.append("=\"");
    // Label values pass the redaction layer (a reason or credential may carry a URL) and leave
    // as valid UTF-8 (Prometheus refuses a whole scrape over one bad label value; a tenant
    // named in a URL path may hold any bytes).
    if (IsPlainLabelValue(v)) {
      out.append(v);
    } else if (!MayNeedRedaction(v) && IsValidUtf8(v)) {
      AppendEscaped(out, v);  // escaped from the view: no copy on an Inc's way
    } else {
      AppendEscaped(out, LabelValueText(v));
    }
    out.push_back('"');
    sep = ',';
  }
  out.push_back('}');
}

// Appends "name{labels} value\n".
void AppendSampleLine(std::string& out, std::string_view name, const Metrics::Labels& labels,
                      double value) {
  AppendSeries(out, name, labels);
  out.push_back(' ');
  AppendSampleValue(out, value);
  out.push_back('\n');
}

// The families GET /metrics collects at each scrape (Metrics::IsCollected).
constexpr CounterId kCollectedCounters[] = {CounterId::kBudgetUnits};
constexpr GaugeId kCollectedGauges[] = {GaugeId::kTenantQueueDepth, GaugeId::kOldestDeferralAge,
                                        GaugeId::kBudgetUtilization, GaugeId::kQuotaUsedRatio,
                                        GaugeId::kTierUtilization};

bool IsCollectedRow(const Definition& d) {
  if (d.type == Type::kCounter) {
    return std::ranges::find(kCollectedCounters, static_cast<CounterId>(d.id)) !=
           std::end(kCollectedCounters);
  }
  return d.type == Type::kGauge &&
         std::ranges::find(kCollectedGauges, static_cast<GaugeId>(d.id)) !=
             std::end(kCollectedGauges);
}

void AppendHeadOf(std::string& out, const Definition& d) {
  const char* type = d.type == Type::kCounter ? "counter"
                     : d.type == Type::kGauge ? "gauge"
                                              : "histogram";
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", d.name, d.help, d.name,
                 type);
}

// The labels part of a series key ("name{labels}" or "name"): empty when it has none.
std::string_view LabelsOf(std::string_view series, std::string_view name) {
  return series.size() > name.size()
             ? series.substr(name.size() + 1, series.size() - name.size() - 2)
             : std::string_view();
}

// Whether `series` is a series of metric `name` (and not of another name it begins with).
bool IsSeriesOf(std::string_view series, std::string_view name) {
  return series.starts_with(name) && (series.size() == name.size() || series[name.size()] == '{');
}

std::string Series(std::string_view name, const std::string& labels, std::string_view extra = {}) {
  std::string all = labels;
  if (!extra.empty()) {
    all += (all.empty() ? "" : ",") + std::string(extra);
  }
  return all.empty() ? std::string(name) : fmt::format("{}{{{}}}", name, all);
}

}  // namespace

std::string_view Metrics::SeriesKey(std::string_view name, const Labels& labels) const {
  series_.clear();
  AppendSeries(series_, name, labels);
  return series_;
}

namespace {

// The entry of `key` in `map`, added (value-initialised) when missing; no allocation when found.
template <typename Map>
typename Map::mapped_type& Slot(Map& map, std::string_view key) {
  auto it = map.lower_bound(key);
  if (it == map.end() || it->first != key) {
    it = map.emplace_hint(it, std::string(key), typename Map::mapped_type());
  }
  return it->second;
}

}  // namespace

Metrics::Metrics() { Set(GaugeId::kBuildInfo, {{"version", Version()}}, 1); }

// The project version alone (a bounded label value: no git description).
std::string_view Metrics::Version() { return VersionNumber(); }

namespace {

// The counters Metrics::TotalsBy sums by one label, and the label.
constexpr std::pair<CounterId, std::string_view> kSummedBy[] = {
    {CounterId::kDeferrals, "reason"}, {CounterId::kDeliveries, "outcome"}};

std::string_view SummedLabelOf(CounterId id) {
  for (const auto& [counter, label] : kSummedBy) {
    if (counter == id) {
      return label;
    }
  }
  return {};
}

}  // namespace

void Metrics::AddToTotals(CounterId id, const Labels& labels, double by) {
  totals_[static_cast<size_t>(id)] += by;
  const std::string_view summed = SummedLabelOf(id);
  if (summed.empty()) {
    return;
  }
  for (const auto& [k, v] : labels) {
    if (k == summed) {
      auto& sums = totals_by_[static_cast<size_t>(id)];
      auto it = sums.find(v);
      if (it == sums.end()) {
        it = sums.emplace(std::string(v), 0.0).first;
      }
      it->second += by;
      return;
    }
  }
}

void Metrics::Inc(CounterId id, const Labels& labels, double by) {
  EGRESS_CHECK(!IsCollected(id));
  Slot(values_, SeriesKey(Of(id).name, labels)).value += by;
  AddToTotals(id, labels, by);
}

void Metrics::SetTotal(CounterId id, const Labels& labels, double total) {
  EGRESS_CHECK(!IsCollected(id));
  double& value = Slot(values_, SeriesKey(Of(id).name, labels)).value;
  AddToTotals(id, labels, total - value);
  value = total;
}

void Metrics::Set(GaugeId id, const Labels& labels, double value) {
  EGRESS_CHECK(!IsCollected(id));
  Slot(values_, SeriesKey(Of(id).name, labels)).value = value;
}

bool Metrics::IsCollected(CounterId id) { return IsCollectedRow(Of(id)); }
bool Metrics::IsCollected(GaugeId id) { return IsCollectedRow(Of(id)); }
void Metrics::AppendHead(std::string& out, CounterId id) { AppendHeadOf(out, Of(id)); }
void Metrics::AppendHead(std::string& out, GaugeId id) { AppendHeadOf(out, Of(id)); }

void Metrics::AppendSample(std::string& out, CounterId id, const Labels& labels, double value) {
  AppendSampleLine(out, Of(id).name, labels, value);
}

void Metrics::AppendSample(std::string& out, GaugeId id, const Labels& labels, double value) {
  AppendSampleLine(out, Of(id).name, labels, value);
}

void Metrics::Clear(GaugeId id) {
  EGRESS_CHECK(!IsCollected(id));
  const std::string_view name = Of(id).name;
  auto it = values_.lower_bound(name);
  while (it != values_.end() && it->first.starts_with(name)) {
    it = IsSeriesOf(it->first, name) ? values_.erase(it) : std::next(it);
  }
}

void Metrics::Erase(GaugeId id, const Labels& labels) {
  EGRESS_CHECK(!IsCollected(id));
  if (auto it = values_.find(SeriesKey(Of(id).name, labels)); it != values_.end()) {
    values_.erase(it);
  }
}

void Metrics::Observe(HistogramId id, const Labels& labels, double value) {
  const Definition& d = Of(id);
  HistogramSeries& h = Slot(histograms_, SeriesKey(d.name, labels));
  h.counts.resize(d.buckets.size());
  for (size_t i = 0; i < d.buckets.size(); ++i) {
    if (value <= d.buckets[i]) {
      h.counts[i] += 1;
    }
  }
  h.sum += value;
  h.count += 1;
}

double Metrics::ValueOf(std::string_view name, const Labels& labels) const {
  auto it = values_.find(SeriesKey(name, labels));
  return it == values_.end() ? 0 : it->second.value;
}

double Metrics::Value(CounterId id, const Labels& labels) const {
  EGRESS_CHECK(!IsCollected(id));
  return ValueOf(Of(id).name, labels);
}

double Metrics::Value(GaugeId id, const Labels& labels) const {
  EGRESS_CHECK(!IsCollected(id));
  return ValueOf(Of(id).name, labels);
}

double Metrics::Total(CounterId id) const {
  EGRESS_CHECK(!IsCollected(id));
  return totals_[static_cast<size_t>(id)];
}

std::map<std::string, double> Metrics::TotalsBy(CounterId id) const {
  EGRESS_CHECK(!SummedLabelOf(id).empty());
  std::map<std::string, double> out;
  for (const auto& [value, sum] : totals_by_[static_cast<size_t>(id)]) {
    out[LabelValueText(value)] += sum;  // values that redact alike are one
  }
  return out;
}

std::string_view Metrics::Name(CounterId id) { return Of(id).name; }
std::string_view Metrics::Name(GaugeId id) { return Of(id).name; }
std::string_view Metrics::Name(HistogramId id) { return Of(id).name; }

std::string Metrics::Render() const {
  std::string out;
  RenderPosition at;
  while (!RenderSome(out, at, SIZE_MAX)) {
  }
  return out;
}

bool Metrics::RenderSome(std::string& out, RenderPosition& at, size_t max_series) const {
  auto sink = std::back_inserter(out);
  size_t written = 0;
  for (; at.definition < std::size(kDefinitions);
       ++at.definition, at.headed = false, at.after.clear(), at.histograms = false) {
    const Definition& d = kDefinitions[at.definition];
    if (IsCollectedRow(d)) {
      continue;  // GET /metrics writes it
    }
    if (!at.headed) {
      AppendHeadOf(out, d);
      at.headed = true;
    }
    if (!at.histograms) {
      auto it = at.after.empty() ? values_.lower_bound(d.name) : values_.upper_bound(at.after);
      auto last = values_.end();  // the last series of the definition out in this call
      for (; it != values_.end() && it->first.starts_with(d.name); ++it) {
        if (!IsSeriesOf(it->first, d.name)) {
          continue;
        }
        if (written == max_series) {
          if (last != values_.end()) {
            at.after = last->first;  // copied once a step, not once a series
          }
          return false;  // goes on at `it`
        }
        out.append(it->first);
        out.push_back(' ');
        AppendSampleValue(out, it->second.value);
        out.push_back('\n');
        last = it;
        ++written;
      }
      at.histograms = true;
      at.after.clear();
    }
    auto it =
        at.after.empty() ? histograms_.lower_bound(d.name) : histograms_.upper_bound(at.after);
    for (; it != histograms_.end() && it->first.starts_with(d.name); ++it) {
      if (!IsSeriesOf(it->first, d.name)) {
        continue;
      }
      if (written >= max_series) {
        return false;
      }
      const std::string labels(LabelsOf(it->first, d.name));
      const auto buckets = d.buckets;
      for (size_t i = 0; i < buckets.size(); ++i) {
        fmt::format_to(
            sink, "{} {}\n",
            Series(std::string(d.name) + "_bucket", labels, fmt::format("le=\"{}\"", buckets[i])),
            it->second.counts[i]);
      }
      fmt::format_to(sink, "{} {}\n",
                     Series(std::string(d.name) + "_bucket", labels, "le=\"+Inf\""),
                     it->second.count);
      fmt::format_to(sink, "{} {}\n", Series(std::string(d.name) + "_sum", labels), it->second.sum);
      fmt::format_to(sink, "{} {}\n", Series(std::string(d.name) + "_count", labels),
                     it->second.count);
      at.after = it->first;
      written += buckets.size() + 3;
    }
  }
  return true;
}

}  // namespace egress::service
