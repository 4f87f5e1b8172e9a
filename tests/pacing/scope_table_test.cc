#include "dispatcher/pacing/scope_table.h"

#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/base/random.h"

namespace egress::pacing {
namespace {

// Verifies that slots survive a random mix of acquires and releases (which shift index
// entries back over freed buckets): every live key keeps its slot, refs and budget.
TEST(ScopeTableTest, RandomAcquireRelease) {
  ScopeTable table;
  SplitMixRandom random(7);
  std::map<ScopeKey, std::pair<uint32_t, uint32_t>> model;  // key → (slot, refs)
  const Budget budgets[] = {{1, 1000, 1}, {50, 1000, 1}, {5, 5000, 2}};
  for (int step = 0; step < 200'000; ++step) {
    // Few distinct low bits, so probes collide and wrap.
    const ScopeKey key = (random.Next() % 3000) * 0x10001ULL + 1;
    auto it = model.find(key);
    if (it == model.end() || random.Next() % 2 == 0) {
      const Budget& budget = budgets[key % 3];
      const uint32_t slot = table.Acquire(key, BudgetName::kWebhookDestination, 0, budget);
      if (it == model.end()) {
        model[key] = {slot, 1};
      } else {
        ASSERT_EQ(slot, it->second.first);
        ++it->second.second;
      }
    } else {
      table.Release(it->second.first);
      if (--it->second.second == 0) {
        model.erase(it);
      }
    }
  }
  ASSERT_EQ(table.size(), model.size());
  for (const auto& [key, entry] : model) {
    EXPECT_EQ(table.at(entry.first).key, key);
    EXPECT_EQ(table.at(entry.first).refs, entry.second);
    EXPECT_EQ(table.budget(entry.first), budgets[key % 3]);
    // Acquiring again finds the same slot.
    EXPECT_EQ(table.Acquire(key, BudgetName::kWebhookDestination, 0, budgets[0]), entry.first);
  }
}

// Verifies that slots with equal budgets share one interned budget and SetBudget moves one.
TEST(ScopeTableTest, SetBudgetChangesOneSlot) {
  ScopeTable table;
  const uint32_t a = table.Acquire(1, BudgetName::kDiscordRoute, 0, {5, 5000, 1});
  const uint32_t b = table.Acquire(2, BudgetName::kDiscordRoute, 0, {5, 5000, 1});
  table.SetBudget(a, {10, 1000, 1}, true);
  EXPECT_EQ(table.budget(a), (Budget{10, 1000, 1}));
  EXPECT_TRUE(table.learned(a));
  EXPECT_EQ(table.params(a), GcraParams::FromBudget({10, 1000, 1}));
  EXPECT_EQ(table.budget(b), (Budget{5, 5000, 1}));
  EXPECT_FALSE(table.learned(b));
  EXPECT_EQ(table.name(b), BudgetName::kDiscordRoute);
}

// Verifies the pacing margin: meters run that fraction slower, budgets read as configured.
TEST(ScopeTableTest, MarginSlowsTheMeterNotTheBudget) {
  ScopeTable table;
  table.set_margin(0.05);
  const uint32_t a = table.Acquire(1, BudgetName::kSlackChannel, 0, {1, 1000, 3});
  EXPECT_EQ(table.budget(a), (Budget{1, 1000, 3}));
  EXPECT_EQ(table.params(a).interval_ns, 1'050'000'000);
  EXPECT_EQ(table.params(a).depth, GcraParams::FromBudget({1, 1000, 3}).depth);
}

}  // namespace
}  // namespace egress::pacing
