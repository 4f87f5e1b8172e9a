#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace egress::service {

// Prometheus metrics with the relay_egress_ prefix. Every metric is declared once in the table
// in metrics.cc (name, type, help, buckets); using an undeclared name is a bug (EGRESS_CHECK).
// All methods run on the service loop.
class Metrics {
 public:
  // Label names and values, in the order they are rendered; only read during the call.
  using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

  void Inc(std::string_view name, const Labels& labels = {}, double by = 1);
  void Set(std::string_view name, const Labels& labels, double value);
  void Observe(std::string_view name, const Labels& labels, double value);  // histograms
  // The value of a counter or gauge series, 0 when never touched (tests, stats).
  double Value(std::string_view name, const Labels& labels = {}) const;
  // Sum over all series of a counter (e.g. 429s received on every platform).
  double Total(std::string_view name) const;

  // The text exposition format, version 0.0.4.
  std::string Render() const;

 private:
  struct Histogram {
    std::vector<double> counts;  // per bucket, cumulative at render time
    double sum = 0;
    double count = 0;
  };
  // Writes the series `name{labels}` (labels escaped) to series_ and returns it: the key of
  // values_ and histograms_. Reuses one buffer, so a series seen before costs no allocation.
  std::string_view SeriesKey(std::string_view name, const Labels& labels) const;

  mutable std::string series_;
  std::map<std::string, double, std::less<>> values_;
  std::map<std::string, Histogram, std::less<>> histograms_;
};

}  // namespace egress::service
