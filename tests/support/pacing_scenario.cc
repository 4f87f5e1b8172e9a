#include "tests/support/pacing_scenario.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "adapters/attempt_reports.h"
#include "adapters/http_header.h"
#include "adapters/rate_limit_headers.h"
#include "dispatcher/base/random.h"
#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/simulator/simulator.h"
#include "tests/support/fake_clock.h"

namespace egress {
namespace {

using pacing::FromNanos;
using pacing::Nanos;
using pacing::ToNanos;

// splitmix64: a seeded sequence for latencies and the pace's jitter.
class SeededRandom final : public Random {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t Next() override {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

struct Event {
  enum class Kind { kArrive, kComplete, kChange, kQueue } kind;
  size_t dest = 0;
  uint64_t sequence = 0;
  sim::SimResponse response;
};

struct DestState {
  pacing::DestinationId id;
  std::map<uint64_t, SteadyTime> pending;  // not in flight, not delivered: sequence → not before
  uint64_t held = 0;                       // the head the Scheduler holds, 0 for none
  int64_t throttled = 0;
};

pacing::SchedulerOptions ProfileOptions() {
  pacing::SchedulerOptions options;
  options.pacing_margin = 0.05;  // server.pacing_margin_percent's default
  // The shipped profiles' throttle_wait (config/profiles): slack, discord, line 1 s, webhook 60 s.
  options.retry[static_cast<size_t>(Platform::kSlack)].throttle_wait = Millis(1000);
  options.retry[static_cast<size_t>(Platform::kDiscord)].throttle_wait = Millis(1000);
  options.retry[static_cast<size_t>(Platform::kLine)].throttle_wait = Millis(1000);
  options.retry[static_cast<size_t>(Platform::kWebhook)].throttle_wait = Millis(60'000);
  return options;
}

void OfferEarliest(pacing::Scheduler& scheduler, DestState& d) {
  if (d.pending.empty()) {
    return;
  }
  const auto& [sequence, not_before] = *d.pending.begin();
  if (d.held != 0 && d.held <= sequence) {
    return;
  }
  pacing::WorkItem item;
  item.id = "d" + std::to_string(sequence);
  item.sequence = sequence;
  item.not_before = not_before;
  if (scheduler.Offer(d.id, std::move(item)).ok()) {
    d.held = sequence;
  }
}

}  // namespace

PacingScenarioResult RunPacingScenario(const PacingScenario& scenario) {
  // DEBUG429 set: every 429 and the next attempt it set, on stderr (read once, not per event).
  const bool debug_429 = std::getenv("DEBUG429") != nullptr;
  PacingScenarioResult result;
  FakeClock clock;
  auto created = sim::Simulator::Create(clock, scenario.sim_config);
  if (!created.has_value()) {
    return result;
  }
  sim::Simulator& simulator = **created;
  pacing::MemoryBudgetStore store;
  SeededRandom random(scenario.seed);
  SeededRandom latency(scenario.seed * 7919 + 1);
  pacing::SchedulerOptions options = ProfileOptions();
  options.connections = scenario.connections;
  options.connection_keep = scenario.connection_keep;
  pacing::Scheduler scheduler(clock, store, random, options);
  for (const auto& [name, budget] : scenario.budgets) {
    scheduler.SetDefaultBudget(name, budget).IgnoreError();
  }
  std::vector<DestState> dests(scenario.destinations.size());
  int64_t total = 0;
  for (size_t i = 0; i < dests.size(); ++i) {
    auto id = scheduler.AddDestination(scenario.destinations[i].spec);
    if (!id.has_value()) {
      return result;
    }
    dests[i].id = *id;
    total += scenario.destinations[i].deliveries;
  }
  std::multimap<int64_t, Event> events;
  const int64_t start_ns = ToNanos(clock.Now());
  Millis late{0};
  for (size_t i = 0; i < dests.size(); ++i) {
    late = std::max(late, scenario.destinations[i].queued_at);
    events.emplace(start_ns + Nanos(scenario.destinations[i].queued_at).count(),
                   Event{Event::Kind::kQueue, i});
  }
  result.done_s.assign(dests.size(), -1);
  int64_t late_left = 0;  // deliveries of the destinations queued at `late` not yet delivered
  for (size_t i = 0; i < dests.size(); ++i) {
    if (late.count() > 0 && scenario.destinations[i].queued_at == late) {
      late_left += scenario.destinations[i].deliveries;
    }
  }
  int64_t in_flight = 0;
  double busy_area = 0;  // connection-seconds in use since `late`
  if (!scenario.change_patch.empty()) {
    events.emplace(start_ns + Nanos(scenario.change_at).count(), Event{Event::Kind::kChange});
  }
  auto half_latency = [&] {
    const int64_t lo = Nanos(scenario.latency_min).count();
    const int64_t span = Nanos(scenario.latency_max).count() - lo;
    const int64_t draw =
        span > 0 ? static_cast<int64_t>(latency.Next() % static_cast<uint64_t>(span)) : 0;
    return (lo + draw) / 2;
  };
  // Requests dispatched and waiting for a connection (StartSend), by token: destination, sequence.
  std::map<uint64_t, std::pair<size_t, uint64_t>> parked;
  uint64_t send_token = 0;
  const size_t last = dests.size() - 1;
  result.last_timeline.resize(static_cast<size_t>(scenario.destinations[last].deliveries));
  auto stamp = [&](size_t i, uint64_t sequence) -> PacingScenarioResult::Timeline* {
    if (i != last || sequence == 0 || sequence > result.last_timeline.size()) {
      return nullptr;
    }
    return &result.last_timeline[sequence - 1];
  };
  auto send = [&](size_t i, uint64_t sequence) {
    ++in_flight;
    if (auto* t = stamp(i, sequence)) {
      t->sent_s = static_cast<double>(ToNanos(clock.Now()) - start_ns) / 1e9;
    }
    events.emplace(ToNanos(clock.Now()) + half_latency(),
                   Event{Event::Kind::kArrive, i, sequence, {}});
  };
  auto send_granted = [&] {
    for (const uint64_t token : scheduler.TakeSendGrants()) {
      auto it = parked.find(token);
      if (it != parked.end()) {
        send(it->second.first, it->second.second);
        parked.erase(it);
      }
    }
  };
  int64_t last_limit = -1;
  bool last_probing = false;
  const int64_t deadline_ns = start_ns + Nanos(scenario.deadline).count();
  auto seconds = [&] { return static_cast<double>(ToNanos(clock.Now()) - start_ns) / 1e9; };
  while (result.delivered < total && ToNanos(clock.Now()) < deadline_ns) {
    pacing::Decision decision = scheduler.Next();
    if (decision.kind == pacing::Decision::Kind::kDispatch) {
      size_t i = 0;
      while (dests[i].id != decision.destination) {
        ++i;
      }
      DestState& d = dests[i];
      d.held = 0;
      d.pending.erase(decision.sequence);
      if (auto* t = stamp(i, decision.sequence)) {
        t->dispatched_s = seconds();
      }
      // As the delivery loop does (leases are instant here): a connection, or wait for one.
      const uint64_t token = ++send_token;
      if (scheduler.StartSend(d.id, token)) {
        send(i, decision.sequence);
      } else {
        parked.emplace(token, std::make_pair(i, decision.sequence));
      }
      OfferEarliest(scheduler, d);
      continue;
    }
    send_granted();  // Next() gives back kept connections whose time is up
    int64_t next_ns = deadline_ns;
    if (decision.kind == pacing::Decision::Kind::kWait) {
      next_ns = std::min(next_ns, ToNanos(decision.wake_at));
    }
    if (!events.empty()) {
      next_ns = std::min(next_ns, events.begin()->first);
    }
    next_ns = std::max(next_ns, ToNanos(clock.Now()));
    if (late.count() > 0 && ToNanos(clock.Now()) >= start_ns + Nanos(late).count()) {
      busy_area += static_cast<double>(in_flight) *
                   static_cast<double>(next_ns - ToNanos(clock.Now())) / 1e9;
    }
    clock.Advance(Nanos(next_ns - ToNanos(clock.Now())));
    while (!events.empty() && events.begin()->first <= ToNanos(clock.Now())) {
      Event event = std::move(events.begin()->second);
      events.erase(events.begin());
      if (event.kind == Event::Kind::kChange) {
        sim::SimRequest patch;
        patch.method = "POST";
        patch.path = "/_sim/config";
        patch.body = scenario.change_patch;
        simulator.Handle(patch);
        continue;
      }
      if (event.kind == Event::Kind::kQueue) {
        DestState& d = dests[event.dest];
        for (int k = 1; k <= scenario.destinations[event.dest].deliveries; ++k) {
          d.pending.emplace(static_cast<uint64_t>(k), SteadyTime{});
        }
        OfferEarliest(scheduler, d);
        continue;
      }
      if (event.kind == Event::Kind::kArrive) {
        sim::SimResponse response = simulator.Handle(scenario.destinations[event.dest].request);
        events.emplace(
            ToNanos(clock.Now()) + half_latency() +
                Nanos(scenario.destinations[event.dest].answer_delay).count(),
            Event{Event::Kind::kComplete, event.dest, event.sequence, std::move(response)});
        continue;
      }
      DestState& d = dests[event.dest];
      --in_flight;
      scheduler.EndSend(d.id);
      send_granted();
      adapters::HttpHeaders headers;
      for (const auto& [name, value] : event.response.headers) {
        headers.push_back(adapters::HttpHeader{name, value});
      }
      const adapters::RateLimitHeaders parsed =
          adapters::ParseRateLimitHeaders(headers, event.response.status, clock.WallNow());
      scheduler.Observe(d.id, adapters::ObservationFrom(parsed)).IgnoreError();
      pacing::DeliveryOutcome outcome;
      outcome.http_status = event.response.status;
      if (event.response.status >= 300) {
        outcome.retry_after = parsed.retry_after;
      }
      if (event.response.status == 429) {
        if (debug_429) {
          std::fprintf(stderr, "429 at %.3f dest %zu\n", seconds(), event.dest);
        }
        ++d.throttled;
        ++result.throttled;
        result.last_throttle_s = seconds();
      }
      auto verdict = scheduler.OnOutcome(d.id, event.sequence, outcome, {0, clock.WallNow()});
      if (debug_429 && event.response.status == 429 && verdict.has_value()) {
        std::fprintf(
            stderr, "   next attempt in %.3f\n",
            static_cast<double>(ToNanos(verdict->next_attempt) - ToNanos(clock.Now())) / 1e9);
      }
      if (!verdict.has_value()) {
        return result;
      }
      if (verdict->kind == pacing::VerdictKind::kDefer) {
        d.pending.emplace(event.sequence, verdict->next_attempt);
        OfferEarliest(scheduler, d);
      } else {
        ++result.delivered;
        result.seconds = seconds();
        result.delivered_s.push_back(seconds());
        result.done_s[event.dest] = seconds();
        if (auto* t = stamp(event.dest, event.sequence)) {
          t->done_s = seconds();
        }
        if (late.count() > 0 && scenario.destinations[event.dest].queued_at == late &&
            --late_left == 0 && scenario.connections.per_origin > 0) {
          const double span = seconds() - static_cast<double>(late.count()) / 1000;
          result.late_busy_share =
              span > 0 ? busy_area / (static_cast<double>(scenario.connections.per_origin) * span)
                       : 1.0;
        }
      }
      {
        // The first destination's key, after every response (the key may be shared: a 429 to
        // another user of the channel lowers it too).
        auto view = scheduler.Inspect(dests.front().id);
        const int64_t limit = view.has_value() && view->adaptive ? view->adaptive->limit : -1;
        const bool probing = view.has_value() && view->adaptive_probing;
        if (limit != last_limit || probing != last_probing) {
          result.trajectory.push_back(PacingScenarioResult::Point{seconds(), limit, probing});
          last_limit = limit;
          last_probing = probing;
        }
      }
    }
  }
  result.finished = result.delivered == total;
  for (const DestState& d : dests) {
    result.max_throttled_per_destination =
        std::max(result.max_throttled_per_destination, d.throttled);
  }
  sim::SimRequest stats;
  stats.method = "GET";
  stats.path = "/_sim/stats";
  const std::string body = simulator.Handle(stats).body;
  // {"totals": {..., "early": N, ...}}
  const size_t totals = body.find("\"totals\"");
  const size_t early = body.find("\"early\":", totals == std::string::npos ? 0 : totals);
  if (early != std::string::npos) {
    result.early = std::stoll(body.substr(early + 8));
  }
  return result;
}

namespace {

sim::SimRequest Post(std::string path, std::string authorization, std::string body) {
  sim::SimRequest request;
  request.method = "POST";
  request.path = std::move(path);
  request.headers = {{"authorization", std::move(authorization)},
                     {"content-type", "application/json"}};
  request.body = std::move(body);
  return request;
}

}  // namespace

PacingScenario LineScenario(int users, int deliveries, int hidden_per_s, int drop_to_per_s,
                            Millis drop_at, uint64_t seed) {
  PacingScenario scenario;
  scenario.name = drop_to_per_s > 0 ? "line-drop" : "line";
  scenario.seed = seed;
  scenario.sim_config = R"({"line": {"rate_per_s": )" + std::to_string(hidden_per_s) + "}}";
  if (drop_to_per_s > 0) {
    scenario.change_patch = R"({"line": {"rate_per_s": )" + std::to_string(drop_to_per_s) + "}}";
    scenario.change_at = drop_at;
  }
  for (int u = 0; u < users; ++u) {
    PacingScenario::Destination dest;
    dest.spec.tenant = "acme";
    dest.spec.platform = Platform::kLine;
    dest.spec.credential = "line-channel-1";
    dest.spec.target = "U" + std::to_string(u);
    dest.request =
        Post("/v2/bot/message/push", "Bearer line-token-1",
             R"({"to":"U)" + std::to_string(u) + R"(","messages":[{"type":"text","text":"hi"}]})");
    dest.deliveries = deliveries / users + (u < deliveries % users ? 1 : 0);
    scenario.destinations.push_back(std::move(dest));
  }
  return scenario;
}

PacingScenario LineShapeScenario(int users, int deliveries, const sim::HiddenLimitSpec& limit,
                                 uint64_t seed) {
  PacingScenario scenario = LineScenario(users, deliveries, 0, 0, Millis(0), seed);
  scenario.name = "line-shape";
  // Long enough for a slow limit's whole run, three times over.
  scenario.deadline = std::max(
      scenario.deadline, Millis(static_cast<int64_t>(3000 * HiddenLimitBound(limit, deliveries))));
  scenario.sim_config = fmt::format(
      R"({{"line": {{"rate_per_s": {}, "shape": "{}", "burst": {}, "window_ms": {}}}}})",
      static_cast<int>(limit.rate_per_s), sim::LimitShapeString(limit.shape), limit.burst,
      limit.window_ms);
  return scenario;
}

double HiddenLimitBound(const sim::HiddenLimitSpec& limit, int deliveries, Millis jitter) {
  if (limit.rate_per_s <= 0 || deliveries <= 0) {
    return 0;
  }
  if (limit.shape == sim::LimitShape::kTokenBucket) {
    const int burst = std::max(1, limit.burst);
    const double spread = static_cast<double>(std::max<int64_t>(0, jitter.count())) / 1000.0;
    const double pace = std::min(limit.rate_per_s, burst / (1.0 / limit.rate_per_s + spread));
    return std::max(0, deliveries - burst) / pace;
  }
  const int per_window = limit.WindowLimit();
  const int windows = (deliveries + per_window - 1) / per_window;
  return static_cast<double>(windows - 1) * static_cast<double>(limit.window_ms) / 1000.0;
}

Millis ArrivalJitter(const PacingScenario& scenario) {
  return std::max(Millis(0), scenario.latency_max - scenario.latency_min) / 2;
}

sim::HiddenLimitSpec DrawHiddenLimit(uint64_t seed, double min_rate, double max_rate,
                                     int max_burst) {
  SeededRandom random(seed * 0x2545f4914f6cdd1dULL + 17);
  sim::HiddenLimitSpec limit;
  limit.shape = static_cast<sim::LimitShape>(seed % 3);  // each shape every third seed
  // Log-uniform: as many slow limits as fast ones.
  const double u = static_cast<double>(random.Next() >> 11) / 9007199254740992.0;
  limit.rate_per_s = std::round(min_rate * std::pow(max_rate / min_rate, u));
  limit.burst = 1 + static_cast<int>(random.Next() % static_cast<uint64_t>(max_burst));
  limit.window_ms = 1000;
  if (limit.rate_per_s < 1) {
    limit.rate_per_s = 1;
  }
  return limit;
}

PacingScenario DiscordScenario(int channels, int per_channel, uint64_t seed) {
  PacingScenario scenario;
  scenario.name = "discord";
  scenario.seed = seed;
  scenario.sim_config =
      R"({"discord": {"bucket_limit": 5, "bucket_window_ms": 5000, "global_per_s": 50}})";
  for (int c = 0; c < channels; ++c) {
    PacingScenario::Destination dest;
    const std::string id = std::to_string(100000000000000000LL + c);
    dest.spec.tenant = "acme";
    dest.spec.platform = Platform::kDiscord;
    dest.spec.credential = "discord-bot-1";
    dest.spec.target = "channels/" + id;
    dest.request =
        Post("/api/v10/channels/" + id + "/messages", "Bot discord-token-1", R"({"content":"hi"})");
    dest.deliveries = per_channel;
    scenario.destinations.push_back(std::move(dest));
  }
  return scenario;
}

PacingScenario SlackScenario(int channels, int per_channel, uint64_t seed, int hidden_burst) {
  PacingScenario scenario;
  scenario.name = "slack";
  scenario.seed = seed;
  scenario.sim_config = R"({"slack": {"channel_rate_per_s": 1, "channel_burst": )" +
                        std::to_string(hidden_burst) +
                        R"(, "workspace_rate_per_s": 1000, "workspace_burst": 1000}})";
  // The workspace cap raised in config, as in the issue; slack_channel left at the profile's
  // 1/s burst 3.
  scenario.budgets = {{pacing::BudgetName::kSlackWorkspace, pacing::Budget{1000, 1000, 100}}};
  for (int c = 0; c < channels; ++c) {
    PacingScenario::Destination dest;
    const std::string id = "C" + std::to_string(1000 + c);
    dest.spec.tenant = "acme";
    dest.spec.platform = Platform::kSlack;
    dest.spec.credential = "slack-workspace-1";
    dest.spec.target = id;
    dest.request = Post("/api/chat.postMessage", "Bearer xoxb-slack-1",
                        R"({"channel":")" + id + R"(","text":"hi"})");
    dest.deliveries = per_channel;
    scenario.destinations.push_back(std::move(dest));
  }
  return scenario;
}

}  // namespace egress

namespace egress {

PacingScenario FairnessScenario(int slow, int fast, uint64_t seed) {
  PacingScenario scenario;
  scenario.name = "fairness";
  scenario.seed = seed;
  scenario.connections = {.per_origin = 16, .total = 256, .streams = 100, .ahead = 16};
  constexpr int kSlowUrls = 50;
  for (int u = 0; u < kSlowUrls; ++u) {
    PacingScenario::Destination dest;
    dest.spec.tenant = "a";
    dest.spec.platform = Platform::kWebhook;
    dest.spec.target = "https://hooks.example/hooks/slow" + std::to_string(u);
    dest.spec.origin = "https://hooks.example";
    dest.request = Post("/hooks/slow" + std::to_string(u), "", R"({"n":1})");
    dest.deliveries = slow / kSlowUrls + (u < slow % kSlowUrls ? 1 : 0);
    dest.answer_delay = Millis(300);
    scenario.destinations.push_back(std::move(dest));
  }
  PacingScenario::Destination b;
  b.spec.tenant = "b";
  b.spec.platform = Platform::kWebhook;
  b.spec.target = "https://hooks.example/hooks/fast";
  b.spec.origin = "https://hooks.example";
  b.request = Post("/hooks/fast", "", R"({"n":1})");
  b.deliveries = fast;
  b.queued_at = Millis(2000);
  scenario.destinations.push_back(std::move(b));
  return scenario;
}

}  // namespace egress
