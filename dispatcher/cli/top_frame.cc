#include "dispatcher/cli/top_frame.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "dispatcher/cli/format.h"

namespace egress::cli {
namespace {

// `text` from the service as the terminal shows it: a control byte (a newline, an ESC) is '?',
// so what the service sends keeps to its row and cannot drive the terminal. Both readers of the
// deferral reasons (/v1/stats, /metrics) pass them through it.
std::string Visible(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return text;
}

using nlohmann::json;

// Lines besides the section rows: title, throughput, states, and per section a blank line and
// a heading.
constexpr int kFixedLines = 9;
// Columns of a busiest-destination row besides the name, keeping about 14 for its state; the
// budget column (9 more) only when the service reports budgets.
constexpr int kBusyColumns = 39;
constexpr int kDoneColumn = 8;
constexpr int kBudgetColumn = 9;

// Cuts at `width` bytes without splitting a UTF-8 character.
std::string Fit(std::string s, size_t width) {
  if (s.size() <= width) {
    return s;
  }
  size_t cut = width;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  s.resize(cut);
  return s;
}

// Keeps the head and the tail of a long name (the tail tells destinations apart), joined by
// "...", in `width` bytes, padded with spaces to `width`.
std::string NameCell(const std::string& s, size_t width) {
  if (s.size() <= width || width < 8) {
    std::string out = Fit(s, width);
    out.append(width - out.size(), ' ');
    return out;
  }
  const size_t head = (width - 3) / 2;
  size_t tail_start = s.size() - (width - 3 - head);
  while (tail_start < s.size() && (static_cast<unsigned char>(s[tail_start]) & 0xC0) == 0x80) {
    ++tail_start;
  }
  std::string out = Fit(s, head) + "..." + s.substr(tail_start);
  out.append(width - std::min(width, out.size()), ' ');
  return out;
}

// Cuts to `width` bytes ending in "..." when cut, then pads with spaces to `width`.
std::string Cell(const std::string& s, size_t width) {
  std::string out = s.size() <= width || width < 4 ? Fit(s, width) : Fit(s, width - 3) + "...";
  out.append(width - std::min(width, out.size()), ' ');
  return out;
}

double Num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

bool Has(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number();
}

std::string Count(const json& j, const char* key) {
  return Has(j, key) ? fmt::format("{}", static_cast<int64_t>(Num(j, key))) : "-";
}

// Per second between two counter readings; "-" without an earlier one.
std::string Rate(double now, std::optional<double> before, int64_t dt_ms) {
  if (!before || dt_ms <= 0 || now < *before) {
    return "-";  // unknown yet, or a counter that went back: the service restarted
  }
  return fmt::format("{:.1f}", (now - *before) * 1000.0 / static_cast<double>(dt_ms));
}

std::optional<double> StatOf(const TopSample* s, const char* key) {
  if (s == nullptr || !Has(s->stats, key)) {
    return std::nullopt;
  }
  return Num(s->stats, key);
}

// What the rates of /metrics' counters are taken from: the text before now's and the time
// between the two texts; without it, previous's text and the time between the samples, unless
// both texts have a made time (then now's is previous's or an older one: none yet).
struct CounterBasis {
  const TopMetrics* before = nullptr;
  int64_t dt_ms = 0;
};

CounterBasis BasisOf(const TopSample& now, const TopSample* previous, int64_t dt_ms) {
  const TopMetrics& m = now.metrics;
  if (now.metrics_before && now.metrics_before->made_s && m.made_s) {
    return {&*now.metrics_before, std::llround((*m.made_s - *now.metrics_before->made_s) * 1000)};
  }
  if (previous == nullptr || (m.made_s && previous->metrics.made_s)) {
    return {};  // the same text as previous's, or an older one (a clock stepped back)
  }
  const TopMetrics& p = previous->metrics;
  if (!p.made_s && !p.delivered && p.deferrals_by_reason.empty()) {
    return {};  // previous read none (its /metrics failed): its zeros are not counts
  }
  return {&previous->metrics, dt_ms};
}

// Delivered a second: from the metrics counter, or the delivered state count without it.
std::string DeliveredRate(const TopSample& now, const TopSample* previous, int64_t dt_ms) {
  if (now.metrics.delivered) {
    const CounterBasis b = BasisOf(now, previous, dt_ms);
    return Rate(*now.metrics.delivered, b.before ? b.before->delivered : std::nullopt, b.dt_ms);
  }
  return Rate(StatOf(&now, "delivered").value_or(0), StatOf(previous, "delivered"), dt_ms);
}

// Why the destination is held back, "" when it is not.
std::string Deferral(const json& d) {
  auto it = d.find("deferral");
  return it != d.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string StateOf(const json& d) {
  if (d.value("disabled", false)) {
    auto it = d.find("disabled_reason");
    return "disabled: " + (it != d.end() && it->is_string() ? it->get<std::string>() : "?");
  }
  const std::string reason = Deferral(d);
  return reason.empty() ? "active" : "deferred: " + reason;
}

// "remaining/limit" from the budget fields when the service gives them, else "".
std::string BudgetOf(const json& d) {
  auto it = d.find("budget");
  if (it == d.end() || it->is_null()) {
    return "";
  }
  const json& b = *it;
  if (b.is_string()) {
    return b.get<std::string>();
  }
  if (b.is_number()) {
    return Has(d, "remaining") ? fmt::format("{}/{}", Count(d, "remaining"), b.dump()) : b.dump();
  }
  if (b.is_object() && Has(b, "limit")) {
    const std::string rem = Has(b, "remaining") ? Count(b, "remaining") : Count(d, "remaining");
    return fmt::format("{}/{}", rem, Count(b, "limit"));
  }
  return b.dump();
}

// Age of the oldest deferral (the API gives its time, Unix ms).
int64_t OldestAgeMs(const json& d, int64_t wall_now_ms) {
  return std::max<int64_t>(0, wall_now_ms - static_cast<int64_t>(Num(d, "oldest_deferral_ms")));
}

std::string Name(const json& d) {
  auto it = d.find("key");
  return DestinationRef(it != d.end() && it->is_string() ? it->get<std::string>() : "?");
}

// How deferred a destination is: its deferred count, else 1 while it is held back.
double DeferredWeight(const json& d) {
  if (Has(d, "deferred")) {
    return Num(d, "deferred");
  }
  return Deferral(d).empty() ? 0 : 1;
}

struct Section {
  std::string heading;
  std::vector<std::string> rows;  // never empty: "  none" stands in
};

Section Deferrals(const TopSample& now, const CounterBasis& basis, size_t name_w) {
  Section s{Cell("DEFERRALS BY REASON", name_w) + "  " + Cell("TOTAL", 10) + "  PER SEC", {}};
  const std::map<std::string, double>& totals = now.metrics.deferrals_by_reason;
  std::vector<std::pair<std::string, double>> reasons(totals.begin(), totals.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [reason, total] : reasons) {
    std::optional<double> before;
    if (basis.before != nullptr) {
      auto it = basis.before->deferrals_by_reason.find(reason);
      before = it == basis.before->deferrals_by_reason.end() ? 0.0 : it->second;
    }
    s.rows.push_back(Cell("  " + reason, name_w) + "  " +
                     Cell(fmt::format("{}", static_cast<int64_t>(total)), 10) + "  " +
                     Rate(total, before, basis.dt_ms));
  }
  return s;
}

Section Busiest(const json& dests, int64_t wall_now_ms, size_t name_w, bool budgets, bool done) {
  Section s{Cell("BUSIEST DESTINATIONS", name_w) + "  QUEUED  IN-FL  DEFER   " +
                (done ? "DONE    " : "") + (budgets ? "BUDGET   " : "") + "STATE",
            {}};
  std::vector<const json*> list;
  for (const json& d : dests) {
    list.push_back(&d);
  }
  auto load = [](const json* d) { return Num(*d, "queued") + Num(*d, "in_flight"); };
  std::stable_sort(list.begin(), list.end(),
                   [&](const json* a, const json* b) { return load(a) > load(b); });
  for (const json* d : list) {
    const std::string budget = BudgetOf(*d);
    // When its backlog would be done (drain_eta_ms; "-" while held or before a pace is known).
    const auto eta = static_cast<int64_t>(Num(*d, "drain_eta_ms"));
    std::string in = eta > 0 ? RelativeTime(std::max(eta, wall_now_ms), wall_now_ms) : "-";
    if (in.starts_with("in ")) {
      in.erase(0, 3);
    }
    s.rows.push_back("  " + NameCell(Name(*d), name_w - 2) + "  " + Cell(Count(*d, "queued"), 6) +
                     "  " + Cell(Count(*d, "in_flight"), 5) + "  " +
                     Cell(Count(*d, "deferred"), 6) + "  " + (done ? Cell(in, 6) + "  " : "") +
                     (budgets ? Cell(budget.empty() ? "-" : budget, 7) + "  " : "") + StateOf(*d));
  }
  return s;
}

Section MostDeferred(const json& dests, int64_t wall_now_ms, size_t name_w) {
  Section s{Cell("MOST DEFERRED", name_w) + "  DEFERRED  OLDEST  NEXT    REASON", {}};
  std::vector<const json*> list;
  for (const json& d : dests) {
    if (DeferredWeight(d) > 0) {
      list.push_back(&d);
    }
  }
  std::stable_sort(list.begin(), list.end(), [&](const json* a, const json* b) {
    if (DeferredWeight(*a) != DeferredWeight(*b)) {
      return DeferredWeight(*a) > DeferredWeight(*b);
    }
    return OldestAgeMs(*a, wall_now_ms) > OldestAgeMs(*b, wall_now_ms);
  });
  for (const json* d : list) {
    const std::string oldest =
        Has(*d, "oldest_deferral_ms")
            ? RelativeTime(wall_now_ms - OldestAgeMs(*d, wall_now_ms), wall_now_ms)
            : "-";
    const auto next = static_cast<int64_t>(Num(*d, "next_eligible_ms"));
    const std::string reason = Deferral(*d);
    s.rows.push_back("  " + NameCell(Name(*d), name_w - 2) + "  " + Cell(Count(*d, "deferred"), 8) +
                     "  " + Cell(oldest == "now" ? "0s" : oldest, 6) + "  " +
                     Cell(RelativeTime(next, wall_now_ms), 6) + "  " +
                     (reason.empty() ? "-" : reason));
  }
  return s;
}

}  // namespace

void ReadMetrics(std::string_view text, TopSample& sample) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const bool made = line.starts_with("relay_egress_metrics_text_made_timestamp_seconds ");
    const bool delivered = line.starts_with("relay_egress_deliveries_total{");
    const bool deferral = line.starts_with("relay_egress_deferrals_total{");
    const size_t space = line.rfind(' ');
    if ((!made && !delivered && !deferral) || space == std::string_view::npos) {
      continue;
    }
    double value = 0;
    const std::string_view number = line.substr(space + 1);
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size()) {
      continue;
    }
    // The label value after `name="`, up to an unescaped quote.
    auto label = [&](std::string_view name) -> std::optional<std::string> {
      const std::string key = std::string(name) + "=\"";
      size_t at = line.find(key);
      while (at != std::string_view::npos && at > 0 && line[at - 1] != '{' && line[at - 1] != ',') {
        at = line.find(key, at + 1);
      }
      if (at == std::string_view::npos) {
        return std::nullopt;
      }
      std::string out;
      for (size_t i = at + key.size(); i < line.size(); ++i) {
        if (line[i] == '"') {
          return out;
        }
        if (line[i] == '\\' && i + 1 < line.size()) {
          ++i;
          out.push_back(line[i] == 'n' ? '\n' : line[i]);
        } else {
          out.push_back(line[i]);
        }
      }
      return std::nullopt;
    };
    if (made) {
      sample.metrics.made_s = value;
    } else if (delivered && label("outcome") == "delivered") {
      sample.metrics.delivered = sample.metrics.delivered.value_or(0) + value;
    } else if (deferral) {
      if (auto reason = label("reason")) {
        sample.metrics.deferrals_by_reason[Visible(std::move(*reason))] += value;
      }
    }
  }
}

bool ReadStatsCounters(const json& stats, TopSample& sample) {
  if (!stats.is_object()) {
    return false;
  }
  auto outcomes = stats.find("attempts_by_outcome");
  auto reasons = stats.find("deferrals_by_reason");
  if (outcomes == stats.end() || reasons == stats.end() || !outcomes->is_object() ||
      !reasons->is_object()) {
    return false;
  }
  // A count: a number from 0 to 2^53 (beyond, it would not print as an integer).
  auto count = [](const json& v) -> std::optional<double> {
    if (!v.is_number()) {
      return std::nullopt;
    }
    const double d = v.get<double>();
    if (!(d >= 0 && d <= 9'007'199'254'740'992.0)) {
      return std::nullopt;
    }
    return d;
  };
  TopMetrics m;
  m.delivered = 0.0;
  if (auto it = outcomes->find("delivered"); it != outcomes->end()) {
    if (auto n = count(*it)) {
      m.delivered = *n;
    }
  }
  for (const auto& [reason, total] : reasons->items()) {
    if (auto n = count(total)) {
      m.deferrals_by_reason[Visible(reason)] += *n;
    }
  }
  sample.metrics = std::move(m);
  return true;
}

void FollowMetrics(const TopSample& previous, TopSample& now) {
  now.metrics_before.reset();
  if (!previous.metrics.made_s || !now.metrics.made_s) {
    return;
  }
  if (*now.metrics.made_s == *previous.metrics.made_s) {
    now.metrics_before = previous.metrics_before;
  } else if (*now.metrics.made_s > *previous.metrics.made_s) {
    now.metrics_before = previous.metrics;
  }
}

std::vector<std::string> RenderTopFrame(const TopSample& now, const TopSample* previous,
                                        const TopView& view) {
  const size_t width = static_cast<size_t>(std::max(view.width, 1));
  const int64_t dt = previous != nullptr ? now.at_ms - previous->at_ms : 0;
  const json dests = now.destinations.is_array() ? now.destinations : json::array();
  const bool budgets =
      std::any_of(dests.begin(), dests.end(), [](const json& d) { return !BudgetOf(d).empty(); });
  // DONE (drain_eta_ms) only where it leaves the names 32 columns: at 80 with a budget column,
  // the names come first.
  const bool done = std::any_of(dests.begin(), dests.end(),
                                [](const json& d) { return Has(d, "drain_eta_ms"); }) &&
                    view.width - kBusyColumns - (budgets ? kBudgetColumn : 0) - kDoneColumn >= 32;
  // The name column is as wide as the longest name or reason needs, leaving the rest to the
  // state and reason columns.
  size_t longest = 20;  // "BUSIEST DESTINATIONS"
  for (const json& d : dests) {
    longest = std::max(longest, Name(d).size() + 2);
  }
  for (const auto& [reason, total] : now.metrics.deferrals_by_reason) {
    longest = std::max(longest, reason.size() + 2);
  }
  const size_t name_w = std::min(
      longest,
      static_cast<size_t>(std::max(16, view.width - kBusyColumns - (budgets ? kBudgetColumn : 0) -
                                           (done ? kDoneColumn : 0))));
  std::vector<std::string> lines;
  lines.push_back("relay-egress top  " + view.source + "  (q quits)");
  lines.push_back(
      fmt::format("delivered {}/s  accepted {}/s  429s {} ({}/s)  throttles {}",
                  DeliveredRate(now, previous, dt),
                  Rate(Num(now.stats, "accepted"), StatOf(previous, "accepted"), dt),
                  Count(now.stats, "platform_429s"),
                  Rate(Num(now.stats, "platform_429s"), StatOf(previous, "platform_429s"), dt),
                  Count(now.stats, "throttles")));
  lines.push_back(fmt::format(
      "queued {}  in-flight {}  deferred {}  delivered {}  dead {}  "
      "cancelled {}",
      Count(now.stats, "queued"), Count(now.stats, "in_flight"), Count(now.stats, "deferred"),
      Count(now.stats, "delivered"), Count(now.stats, "dead"), Count(now.stats, "cancelled")));
  std::vector<Section> sections = {Deferrals(now, BasisOf(now, previous, dt), name_w),
                                   Busiest(dests, view.wall_now_ms, name_w, budgets, done),
                                   MostDeferred(dests, view.wall_now_ms, name_w)};
  for (Section& s : sections) {
    if (s.rows.empty()) {
      s.rows.push_back("  none");
    }
  }
  // Rows left for the sections, dealt one at a time (destinations first) to the sections that
  // have more to show, so a short section leaves its rows to the others.
  int avail = std::max(0, view.height - kFixedLines);
  size_t keep[] = {0, 0, 0};
  for (bool dealt = true; avail > 0 && dealt;) {
    dealt = false;
    for (size_t i : {1, 2, 0}) {
      if (avail > 0 && keep[i] < sections[i].rows.size()) {
        ++keep[i];
        --avail;
        dealt = true;
      }
    }
  }
  for (size_t i = 0; i < sections.size(); ++i) {
    lines.emplace_back();
    lines.push_back(sections[i].heading);
    for (size_t r = 0; r < keep[i]; ++r) {
      lines.push_back(sections[i].rows[r]);
    }
  }
  if (lines.size() > static_cast<size_t>(std::max(view.height, 0))) {
    lines.resize(static_cast<size_t>(std::max(view.height, 0)));
  }
  for (std::string& line : lines) {
    line = Fit(std::move(line), width);
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
  }
  return lines;
}

}  // namespace egress::cli
