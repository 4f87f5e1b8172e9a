#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace egress::cli {

// What `top` reads from one /metrics text.
struct TopMetrics {
  std::optional<double> made_s;     // relay_egress_metrics_text_made_timestamp_seconds
  std::optional<double> delivered;  // relay_egress_deliveries_total{outcome="delivered"}
  std::map<std::string, double> deferrals_by_reason;  // relay_egress_deferrals_total, by reason
};

// One look at the running service, for `top`.
struct TopSample {
  int64_t at_ms = 0;            // when it was taken (steady ms: only differences matter)
  nlohmann::json stats;         // GET /v1/stats
  nlohmann::json destinations;  // the "destinations" array of GET /v1/destinations
  TopMetrics metrics;           // GET /metrics (empty without it)
  // The text before this sample's: GET /metrics answers one text for 1-10 s (docs/api.md,
  // "Metrics"), so samples a second apart often get the same one; the rates of its counters are
  // taken between two texts, over the times they were made (FollowMetrics). Without it, between
  // this sample and the one before.
  std::optional<TopMetrics> metrics_before;
};

// Adds to `sample` what `top` reads from the Prometheus text of GET /metrics (sums over the
// other labels). Lines it does not understand are skipped.
void ReadMetrics(std::string_view text, TopSample& sample);

// The same from GET /v1/stats' attempts_by_outcome and deferrals_by_reason, which a service
// has shown since they were added; false (nothing set) without them. Values that are not numbers
// are skipped.
bool ReadStatsCounters(const nlohmann::json& stats, TopSample& sample);

// Sets `now.metrics_before`, `previous` being the sample taken before `now`: previous's
// metrics_before when both got the same text (the same made time), previous's text when `now`
// got a newer one; none when either text has no made time.
void FollowMetrics(const TopSample& previous, TopSample& now);

// What the frame shows besides the samples.
struct TopView {
  std::string source;       // "http://127.0.0.1:8686"
  int64_t wall_now_ms = 0;  // for "in 12s" / "3m ago"
  int width = 80;
  int height = 24;
};

// The screen for `now`: at most view.height lines, each at most view.width bytes (and so at most
// that many columns), no trailing newlines. Rates are per second since `previous` ("-" without
// one), or for /metrics' counters since now.metrics_before when it is set. Destination fields added
// later to GET /v1/destinations (queued, deferred, oldest_deferral_ms, budget, remaining) are used
// when present.
std::vector<std::string> RenderTopFrame(const TopSample& now, const TopSample* previous,
                                        const TopView& view);

}  // namespace egress::cli
