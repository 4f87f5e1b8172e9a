// BudgetUse: units per (tenant, budget) since start, and the last minute's share of each scope's
// budget, the busiest scope per (tenant, budget).

#include "dispatcher/service/delivery/budget_use.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace egress::service {
namespace {

using pacing::Budget;
using pacing::BudgetName;

// 10 units per second: 600 a minute.
constexpr Budget kTenPerSecond{.limit = 10, .scale_ms = 1000, .burst = 10};

// Verifies that totals add up per (tenant, budget) across scopes and never drop with the window.
TEST(BudgetUseTest, TotalsAddUpAcrossScopesAndStay) {
  FakeClock clock;
  BudgetUse use;
  use.Take("acme", BudgetName::kWebhookDestination, 1, kTenPerSecond, 3, clock.Now());
  use.Take("acme", BudgetName::kWebhookDestination, 2, kTenPerSecond, 2, clock.Now());
  use.Take("acme", BudgetName::kTenantEgress, 3, kTenPerSecond, 5, clock.Now());
  use.Take("beta", BudgetName::kTenantEgress, 4, kTenPerSecond, 1, clock.Now());
  clock.Advance(std::chrono::minutes(5));
  use.Prune(clock.Now());
  EXPECT_EQ(use.scope_count(), 0u);
  auto totals = use.Totals();
  ASSERT_EQ(totals.size(), 3u);
  EXPECT_EQ(totals[0].tenant, "acme");
  EXPECT_EQ(totals[0].budget, BudgetName::kTenantEgress);
  EXPECT_EQ(totals[0].units, 5u);
  EXPECT_EQ(totals[1].budget, BudgetName::kWebhookDestination);
  EXPECT_EQ(totals[1].units, 5u);
  EXPECT_EQ(totals[2].tenant, "beta");
  EXPECT_EQ(totals[2].units, 1u);
}

// Verifies the ratio: the last minute's units over the scope's budget for a minute, the busiest
// scope of a (tenant, budget) winning, and use older than a minute leaving the window.
TEST(BudgetUseTest, UtilizationIsTheBusiestScopesShareOfTheLastMinute) {
  FakeClock clock;
  BudgetUse use;
  // Take answers the scope's share of its minute with the units it took.
  EXPECT_DOUBLE_EQ(use.Take("acme", BudgetName::kDiscordGlobal, 7, kTenPerSecond, 60, clock.Now()),
                   0.1);
  EXPECT_DOUBLE_EQ(use.Take("acme", BudgetName::kDiscordGlobal, 8, kTenPerSecond, 30, clock.Now()),
                   0.05);
  // 1 per 2 s = 30 a minute: 15 units is half of it.
  use.Take("acme", BudgetName::kTenantEgress, 9, Budget{1, 2000, 1}, 15, clock.Now());
  clock.Advance(std::chrono::seconds(30));
  use.Take("acme", BudgetName::kDiscordGlobal, 7, kTenPerSecond, 60, clock.Now());  // 20% now
  auto ratios = use.Utilization(clock.Now());
  ASSERT_EQ(ratios.size(), 2u);
  EXPECT_EQ(ratios[0].budget, BudgetName::kTenantEgress);
  EXPECT_DOUBLE_EQ(ratios[0].ratio, 0.5);
  EXPECT_EQ(ratios[1].budget, BudgetName::kDiscordGlobal);
  EXPECT_DOUBLE_EQ(ratios[1].ratio, 0.2);
  clock.Advance(std::chrono::seconds(40));  // the first takes are 70 s old
  ratios = use.Utilization(clock.Now());
  ASSERT_EQ(ratios.size(), 1u);
  EXPECT_EQ(ratios[0].budget, BudgetName::kDiscordGlobal);
  EXPECT_DOUBLE_EQ(ratios[0].ratio, 0.1);
  EXPECT_EQ(use.scope_count(), 1u) << "idle scopes are forgotten";
  clock.Advance(std::chrono::seconds(61));
  EXPECT_TRUE(use.Utilization(clock.Now()).empty());
  EXPECT_EQ(use.scope_count(), 0u);
}

// Verifies that a walk in steps of one reads what Totals and Utilization read, one total, scope
// or ratio a step; that a total added after the walk's place meanwhile is read as the step that
// reaches it finds it, while the scopes are those of the walk's start; and that a walk forgets
// the idle scopes it reaches.
TEST(BudgetUseTest, AWalkInStepsReadsWhatTheWholeReadsAndWhatChangedMeanwhile) {
  FakeClock clock;
  BudgetUse use;
  use.Take("acme", BudgetName::kTenantEgress, 1, kTenPerSecond, 60, clock.Now());   // 10%
  use.Take("beta", BudgetName::kTenantEgress, 2, kTenPerSecond, 30, clock.Now());   // 5%
  use.Take("beta", BudgetName::kTenantEgress, 3, kTenPerSecond, 120, clock.Now());  // 20%
  clock.Advance(std::chrono::seconds(59));
  use.Take("gamma", BudgetName::kTenantEgress, 4, kTenPerSecond, 6, clock.Now());  // 1%

  BudgetUse::Walk walk(use, clock.Now());
  std::vector<BudgetUse::Total> totals;
  std::vector<BudgetUse::Ratio> ratios;
  auto step = [&] {
    return walk.Step(
        1, [&](const BudgetUse::Total& t) { totals.push_back(t); },
        [&](const BudgetUse::Ratio& r) { ratios.push_back(r); });
  };
  EXPECT_FALSE(step());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].tenant, "acme");
  // Meanwhile a new tenant takes units (after the walk's place, before gamma) and acme more.
  use.Take("delta", BudgetName::kTenantEgress, 5, kTenPerSecond, 12, clock.Now());
  use.Take("beta", BudgetName::kTenantEgress, 2, kTenPerSecond, 1, clock.Now());
  size_t steps = 1;
  while (!step()) {
    ++steps;
    ASSERT_LT(steps, 100u);
  }
  ASSERT_EQ(totals.size(), 4u);
  EXPECT_EQ(totals[1].tenant, "beta");
  EXPECT_EQ(totals[1].units, 151u) << "read after the take meanwhile";
  EXPECT_EQ(totals[2].tenant, "delta");
  EXPECT_EQ(totals[2].units, 12u);
  EXPECT_EQ(totals[3].tenant, "gamma");
  // The scopes are those of the walk's start (delta's is not among them), each read when its
  // step reaches it: acme's and beta's, 59 s old, still count.
  ASSERT_EQ(ratios.size(), 3u);
  std::map<std::string, double> by_tenant;
  for (const BudgetUse::Ratio& r : ratios) {
    by_tenant[r.tenant] = r.ratio;
  }
  EXPECT_DOUBLE_EQ(by_tenant["acme"], 0.1);
  EXPECT_DOUBLE_EQ(by_tenant["beta"], 0.2) << "the busiest of beta's two scopes";
  EXPECT_EQ(by_tenant.count("delta"), 0u);
  EXPECT_DOUBLE_EQ(by_tenant["gamma"], 0.01);
  EXPECT_GE(steps, totals.size() + 4 + ratios.size() - 1) << "one read a step";

  // A later walk prunes what went idle: only the scopes used in the last minute stay.
  clock.Advance(std::chrono::seconds(60));
  BudgetUse::Walk later(use, clock.Now());
  while (!later.Step(
      1, [](const BudgetUse::Total&) {}, [](const BudgetUse::Ratio&) {})) {
  }
  EXPECT_EQ(use.scope_count(), 0u);
}

// Verifies that a walk reads every scope once after scopes came and went (its keys are kept side
// by side with the scopes: a pruned scope's place is taken by the last one).
TEST(BudgetUseTest, AWalkReadsEveryScopeLeftAfterPrunes) {
  FakeClock clock;
  BudgetUse use;
  for (pacing::ScopeKey key = 1; key <= 300; ++key) {
    use.Take("t" + std::to_string(key), BudgetName::kTenantEgress, key, kTenPerSecond, 1,
             clock.Now());
  }
  clock.Advance(Millis(40'000));
  // The even keys are used again; the odd ones fall out of the minute and are pruned.
  for (pacing::ScopeKey key = 2; key <= 300; key += 2) {
    use.Take("t" + std::to_string(key), BudgetName::kTenantEgress, key, kTenPerSecond, 6,
             clock.Now());
  }
  clock.Advance(Millis(25'000));
  use.Prune(clock.Now());
  EXPECT_EQ(use.scope_count(), 150u);
  // A scope added after the prunes is read too.
  use.Take("new", BudgetName::kTenantEgress, 1000, kTenPerSecond, 6, clock.Now());
  std::map<std::string, double> ratios;
  BudgetUse::Walk walk(use, clock.Now());
  while (!walk.Step(
      7, [](const BudgetUse::Total&) {},
      [&](const BudgetUse::Ratio& r) { EXPECT_TRUE(ratios.emplace(r.tenant, r.ratio).second); })) {
  }
  EXPECT_EQ(ratios.size(), 151u);
  EXPECT_DOUBLE_EQ(ratios["t2"], 6.0 / 600.0);
  EXPECT_EQ(ratios.count("t1"), 0u);
  EXPECT_DOUBLE_EQ(ratios["new"], 6.0 / 600.0);

  // A minute later only "new" is used again: a walk in steps erases the other 150 as it reads
  // them, and the next one reads "new" alone (scope_count checks the keys against the scopes).
  clock.Advance(Millis(61'000));
  use.Take("new", BudgetName::kTenantEgress, 1000, kTenPerSecond, 1, clock.Now());
  BudgetUse::Walk erasing(use, clock.Now());
  while (!erasing.Step(
      7, [](const BudgetUse::Total&) {}, [](const BudgetUse::Ratio&) {})) {
  }
  EXPECT_EQ(use.scope_count(), 1u);
  ratios.clear();
  BudgetUse::Walk last(use, clock.Now());
  while (!last.Step(
      7, [](const BudgetUse::Total&) {},
      [&](const BudgetUse::Ratio& r) { EXPECT_TRUE(ratios.emplace(r.tenant, r.ratio).second); })) {
  }
  EXPECT_EQ(ratios.size(), 1u);
  EXPECT_EQ(ratios.count("new"), 1u);
}

}  // namespace
}  // namespace egress::service
