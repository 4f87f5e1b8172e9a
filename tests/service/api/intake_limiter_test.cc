#include "dispatcher/service/api/intake_limiter.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace egress::service {
namespace {

// Verifies a new default (a config reload) applies at once to tenants without an override, with
// a full meter, and leaves an overridden tenant's budget and meter alone.
TEST(IntakeLimiterTest, SetDefaultBudgetSparesOverrides) {
  FakeClock clock;
  IntakeLimiter limiter(clock, {2, 1000, 2});
  limiter.SetBudget("pinned", pacing::Budget{2, 1000, 2});
  for (const char* tenant : {"acme", "pinned"}) {
    EXPECT_TRUE(limiter.Take(tenant, 2).allowed) << tenant;
    EXPECT_FALSE(limiter.Take(tenant, 1).allowed) << tenant;
  }
  limiter.SetDefaultBudget({10, 1000, 10});
  IntakeLimiter::Decision acme = limiter.Take("acme", 10);  // no time has passed
  EXPECT_TRUE(acme.allowed);
  EXPECT_EQ(acme.budget.limit, 10);
  IntakeLimiter::Decision pinned = limiter.Take("pinned", 1);
  EXPECT_FALSE(pinned.allowed);
  EXPECT_EQ(pinned.budget.limit, 2);
  // A tenant first seen after the reload gets the new default; clearing an override too.
  EXPECT_EQ(limiter.Take("fresh", 1).budget.limit, 10);
  limiter.SetBudget("pinned", std::nullopt);
  EXPECT_EQ(limiter.Take("pinned", 1).budget.limit, 10);
}

}  // namespace
}  // namespace egress::service
