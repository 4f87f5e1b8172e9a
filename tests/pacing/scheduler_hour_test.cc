#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kHourNs = 3'600'000'000'000;

struct KeyLog {
  Budget budget;
  bool binding = false;  // the key that limits its destinations' backlog
  std::vector<int64_t> sends;
};

// One tenant's share of the simulated fleet: 100 destinations of one platform.
struct TenantPlan {
  std::string tenant;
  Platform platform;
  std::vector<std::pair<BudgetName, Budget>> overrides;
  BudgetName binding;
};

std::vector<TenantPlan> Plans() {
  using B = BudgetName;
  return {
      {"t0", Platform::kWebhook, {{B::kWebhookDestination, {1, 2000, 1}}}, B::kWebhookDestination},
      {"t1", Platform::kWebhook, {{B::kWebhookDestination, {1, 5000, 1}}}, B::kWebhookDestination},
      {"t2", Platform::kWebhook, {{B::kWebhookDestination, {3, 10000, 1}}}, B::kWebhookDestination},
      {"t3", Platform::kWebhook, {{B::kWebhookDestination, {1, 4000, 2}}}, B::kWebhookDestination},
      {"t4",
       Platform::kWebhook,
       {{B::kWebhookDestination, {12, 60000, 1}}},
       B::kWebhookDestination},
      {"t5",
       Platform::kWebhook,
       {{B::kWebhookDestination, {1, 1000, 1}}, {B::kTenantEgress, {20, 1000, 1}}},
       B::kTenantEgress},
      {"t6",
       Platform::kSlack,
       {{B::kSlackChannel, {1, 10000, 1}}, {B::kSlackWorkspace, {300, 60000, 1}}},
       B::kSlackWorkspace},
      {"t7",
       Platform::kSlack,
       {{B::kSlackChannel, {1, 10000, 1}}, {B::kSlackWorkspace, {1200, 60000, 1}}},
       B::kSlackChannel},
      {"t8", Platform::kDiscord, {}, B::kDiscordGlobal},
      {"t9", Platform::kDiscord, {{B::kDiscordRoute, {1, 5000, 1}}}, B::kDiscordRoute},
  };
}

std::string Target(Platform platform, const std::string& tenant, int i) {
  switch (platform) {
    case Platform::kDiscord:
      return "channels/" + tenant + std::to_string(i);
    case Platform::kSlack:
      return "C" + std::to_string(i);
    default:
      return "https://" + tenant + ".example/" + std::to_string(i);
  }
}

class HourSimulation {
 public:
  // No pacing margin and no window offset: the budgets themselves are checked, exactly.
  HourSimulation()
      : scheduler_(clock_, store_, random_, SchedulerOptions{.global_window_offset = Millis(0)}) {
    for (const TenantPlan& plan : Plans()) {
      EXPECT_TRUE(scheduler_.SetTenantBudgets(plan.tenant, plan.overrides).ok());
      for (int i = 0; i < 100; ++i) {
        DestinationSpec spec;
        spec.tenant = plan.tenant;
        spec.platform = plan.platform;
        spec.credential = plan.tenant + "-token";
        spec.target = Target(plan.platform, plan.tenant, i);
        AddDestination(spec, plan.binding);
      }
    }
  }

  void AddDestination(const DestinationSpec& spec, BudgetName binding) {
    DestinationId id = *scheduler_.AddDestination(spec);
    ScopePath path = *BuildScopePath(spec);
    std::vector<KeyLog*> logs;
    for (uint8_t i = 0; i < path.size; ++i) {
      KeyLog& log = keys_[path.keys[i]];
      log.budget = *scheduler_.EffectiveBudget(id, path.budgets[i]);
      log.binding = path.budgets[i] == binding;
      logs.push_back(&log);
    }
    if (paths_.size() <= id.value) {
      paths_.resize(id.value + 1);
    }
    paths_[id.value] = std::move(logs);
    Offer(id);
  }

  void Offer(DestinationId id) {
    WorkItem item;
    item.sequence = ++sequence_;
    item.id = "d";
    ASSERT_TRUE(scheduler_.Offer(id, std::move(item)).ok());
  }

  void RunHour() {
    const int64_t start = ToNanos(clock_.Now());
    DeliveryOutcome ok;
    ok.http_status = 200;
    while (true) {
      Decision decision = scheduler_.Next();
      const int64_t now = ToNanos(clock_.Now()) - start;
      if (decision.kind == Decision::Kind::kWait) {
        if (ToNanos(decision.wake_at) - start >= kHourNs) {
          return;
        }
        clock_.Advance(decision.wake_at - clock_.Now());
        continue;
      }
      ASSERT_EQ(decision.kind, Decision::Kind::kDispatch);
      for (KeyLog* log : paths_[decision.destination.value]) {
        log->sends.push_back(now);
      }
      ASSERT_TRUE(
          scheduler_.OnOutcome(decision.destination, decision.sequence, ok, {}).has_value());
      Offer(decision.destination);
    }
  }

  std::unordered_map<ScopeKey, KeyLog> keys_;

 private:
  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  std::vector<std::vector<KeyLog*>> paths_;
  uint64_t sequence_ = 0;
};

// The most sends of `log` in any window of the budget's scale.
int64_t MaxInWindow(const KeyLog& log) {
  const int64_t scale_ns = log.budget.scale_ms * 1'000'000;
  int64_t best = 0;
  size_t j = 0;
  for (size_t i = 0; i < log.sends.size(); ++i) {
    j = std::max(j, i);
    while (j < log.sends.size() && log.sends[j] < log.sends[i] + scale_ns) {
      ++j;
    }
    best = std::max<int64_t>(best, static_cast<int64_t>(j - i));
  }
  return best;
}

// Verifies over a simulated hour of 1,000 backlogged destinations with mixed, nested budgets that
// no sliding window of any key exceeds its limit (plus burst - 1) and that every binding key
// reaches at least 99% of its limit.
TEST(SchedulerHourTest, HourOfBacklogKeepsEveryBudget) {
  HourSimulation sim;
  sim.RunHour();
  int binding = 0;
  for (const auto& [key, log] : sim.keys_) {
    EXPECT_LE(MaxInWindow(log), log.budget.limit + log.budget.burst - 1)
        << "limit " << log.budget.limit << "/" << log.budget.scale_ms << "ms";
    if (log.binding) {
      ++binding;
      const double full = static_cast<double>(log.budget.limit) * 3'600'000.0 /
                          static_cast<double>(log.budget.scale_ms);
      EXPECT_GE(static_cast<double>(log.sends.size()), 0.99 * full)
          << "limit " << log.budget.limit << "/" << log.budget.scale_ms << "ms";
    }
  }
  // 5 x 100 webhook keys, t5's tenant key, t6's workspace, t7's 100 channels, t8's global key,
  // t9's 100 routes.
  EXPECT_EQ(binding, 500 + 1 + 1 + 100 + 1 + 100);
}

}  // namespace
}  // namespace egress::pacing
