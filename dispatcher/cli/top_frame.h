#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace egress::cli {

// One look at the running service, for `top`.
struct TopSample {
  int64_t at_ms = 0;                // when it was taken (steady ms: only differences matter)
  nlohmann::json stats;             // GET /v1/stats
  nlohmann::json destinations;      // the "destinations" array of GET /v1/destinations
  std::optional<double> delivered;  // relay_egress_deliveries_total{outcome="delivered"}
  std::map<std::string, double> deferrals_by_reason;  // relay_egress_deferrals_total, by reason
};

// Adds to `sample` what `top` reads from the Prometheus text of GET /metrics (sums over the
// other labels). Lines it does not understand are skipped.
void ReadMetrics(std::string_view text, TopSample& sample);

// What the frame shows besides the samples.
struct TopView {
  std::string source;       // "http://127.0.0.1:8686"
  int64_t wall_now_ms = 0;  // for "in 12s" / "3m ago"
  int width = 80;
  int height = 24;
};

// The screen for `now`: at most view.height lines, each at most view.width bytes (and so at most
// that many columns), no trailing newlines. Rates are per second since `previous` ("-" without
// one). Destination fields added later to GET /v1/destinations (queued, deferred,
// oldest_deferral_ms, budget, remaining) are used when present.
std::vector<std::string> RenderTopFrame(const TopSample& now, const TopSample* previous,
                                        const TopView& view);

}  // namespace egress::cli
