#include "dispatcher/service/metrics.h"

#include <array>
#include <span>

#include <fmt/format.h>

#include "dispatcher/base/check.h"

namespace egress::service {
namespace {

enum class Type { kCounter, kGauge, kHistogram };

struct Definition {
  std::string_view name;
  Type type;
  std::string_view help;
};

constexpr std::array<double, 12> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,    2.5,   5,    10,  30};
constexpr std::array<double, 6> kFillBuckets = {0, 0.25, 0.5, 0.75, 0.9, 1};

constexpr Definition kDefinitions[] = {
    {"relay_egress_deliveries_accepted_total", Type::kCounter,
     "Deliveries made durable by intake, by tenant and platform."},
    {"relay_egress_deliveries_total", Type::kCounter,
     "Attempts that ended a delivery or deferred it, by platform and outcome."},
    {"relay_egress_deferrals_total", Type::kCounter,
     "Deliveries deferred, by tenant, platform and reason."},
    {"relay_egress_throttles_total", Type::kCounter,
     "Platform throttles (429 or body throttle) received, by tenant, platform and reason."},
    {"relay_egress_platform_429_total", Type::kCounter,
     "HTTP 429 responses received, by platform."},
    {"relay_egress_intake_rejections_total", Type::kCounter,
     "Intake requests refused, by tenant and reason (rate_limited, backlog, invalid, ...)."},
    {"relay_egress_queue_depth", Type::kGauge, "Deliveries per state."},
    {"relay_egress_oldest_deferral_age_seconds", Type::kGauge,
     "Age of the oldest deferred delivery a destination holds."},
    {"relay_egress_platform_remaining", Type::kGauge,
     "Last rate-limit remaining a platform reported, by destination."},
    {"relay_egress_bucket_fill_ratio", Type::kHistogram,
     "How full a destination's platform bucket was when it answered (1 = exhausted)."},
    {"relay_egress_attempt_duration_seconds", Type::kHistogram,
     "Request to response time of delivery attempts, by platform."},
    {"relay_egress_destinations", Type::kGauge, "Destinations with work, known to the scheduler."},
    {"relay_egress_store_errors_total", Type::kCounter,
     "Store writes of the delivery loop that failed, by operation."},
    {"relay_egress_discord_invalid_request_stops_total", Type::kCounter,
     "Times a Discord token was stopped near the invalid-request ban line, by credential."},
};

const Definition& Find(std::string_view name) {
  for (const Definition& d : kDefinitions) {
    if (d.name == name) {
      return d;
    }
  }
  EGRESS_CHECK(false && "metric not declared in metrics.cc");
  return kDefinitions[0];
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

// The labels part of a series key ("name{labels}" or "name"): empty when it has none.
std::string_view LabelsOf(std::string_view series, std::string_view name) {
  return series.size() > name.size() ? series.substr(name.size() + 1, series.size() - name.size() - 2)
                                     : std::string_view();
}

// Whether `series` is a series of metric `name` (and not of another name it begins with).
bool IsSeriesOf(std::string_view series, std::string_view name) {
  return series.starts_with(name) && (series.size() == name.size() || series[name.size()] == '{');
}

std::span<const double> BucketsOf(std::string_view name) {
  if (name == "relay_egress_bucket_fill_ratio") {
    return kFillBuckets;
  }
  return kLatencyBuckets;
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
  series_.assign(name);
  if (labels.size() != 0) {
    char sep = '{';
    for (const auto& [k, v] : labels) {
      series_.push_back(sep);
      series_.append(k);
      series_.append("=\"");
      AppendEscaped(series_, v);
      series_.push_back('"');
      sep = ',';
    }
    series_.push_back('}');
  }
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

void Metrics::Inc(std::string_view name, const Labels& labels, double by) {
  EGRESS_CHECK(Find(name).type == Type::kCounter);
  Slot(values_, SeriesKey(name, labels)) += by;
}

void Metrics::Set(std::string_view name, const Labels& labels, double value) {
  EGRESS_CHECK(Find(name).type == Type::kGauge);
  Slot(values_, SeriesKey(name, labels)) = value;
}

void Metrics::Observe(std::string_view name, const Labels& labels, double value) {
  EGRESS_CHECK(Find(name).type == Type::kHistogram);
  Histogram& h = Slot(histograms_, SeriesKey(name, labels));
  const auto buckets = BucketsOf(name);
  h.counts.resize(buckets.size());
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (value <= buckets[i]) {
      h.counts[i] += 1;
    }
  }
  h.sum += value;
  h.count += 1;
}

double Metrics::Value(std::string_view name, const Labels& labels) const {
  auto it = values_.find(SeriesKey(name, labels));
  return it == values_.end() ? 0 : it->second;
}

double Metrics::Total(std::string_view name) const {
  double sum = 0;
  for (auto it = values_.lower_bound(name); it != values_.end() && it->first.starts_with(name);
       ++it) {
    if (IsSeriesOf(it->first, name)) {
      sum += it->second;
    }
  }
  return sum;
}

std::string Metrics::Render() const {
  std::string out;
  for (const Definition& d : kDefinitions) {
    const char* type = d.type == Type::kCounter ? "counter"
                       : d.type == Type::kGauge ? "gauge"
                                                : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", d.name, d.help, d.name, type);
    for (auto it = values_.lower_bound(d.name);
         it != values_.end() && it->first.starts_with(d.name); ++it) {
      if (IsSeriesOf(it->first, d.name)) {
        out += fmt::format("{} {}\n", it->first, it->second);
      }
    }
    for (auto it = histograms_.lower_bound(d.name);
         it != histograms_.end() && it->first.starts_with(d.name); ++it) {
      if (!IsSeriesOf(it->first, d.name)) {
        continue;
      }
      const std::string labels(LabelsOf(it->first, d.name));
      const auto buckets = BucketsOf(d.name);
      for (size_t i = 0; i < buckets.size(); ++i) {
        out += fmt::format("{} {}\n",
                           Series(std::string(d.name) + "_bucket", labels,
                                  fmt::format("le=\"{}\"", buckets[i])),
                           it->second.counts[i]);
      }
      out += fmt::format("{} {}\n",
                         Series(std::string(d.name) + "_bucket", labels, "le=\"+Inf\""),
                         it->second.count);
      out += fmt::format("{} {}\n", Series(std::string(d.name) + "_sum", labels),
                         it->second.sum);
      out += fmt::format("{} {}\n", Series(std::string(d.name) + "_count", labels),
                         it->second.count);
    }
  }
  return out;
}

}  // namespace egress::service
