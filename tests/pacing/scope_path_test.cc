#include "dispatcher/pacing/scope_path.h"

#include <gtest/gtest.h>

#include "tests/support/scheduler_driver.h"

namespace egress::pacing {
namespace {

DestinationSpec Spec(Platform platform, std::string target, std::string credential = "bot") {
  return AcmeSpec(platform, std::move(target), std::move(credential));
}

// Verifies the Discord path: tenant egress, global per token, then route bucket + major.
TEST(ScopePathTest, DiscordPathHasGlobalThenRoute) {
  Result<ScopePath> path = BuildScopePath(Spec(Platform::kDiscord, "channels/123"));
  ASSERT_TRUE(path.has_value());
  ASSERT_EQ(path->size, 3);
  EXPECT_EQ(path->budgets[0], BudgetName::kTenantEgress);
  EXPECT_EQ(path->budgets[1], BudgetName::kDiscordGlobal);
  EXPECT_EQ(path->budgets[2], BudgetName::kDiscordRoute);
  EXPECT_EQ(path->credential_index, 1);
  EXPECT_EQ(path->leaf_index, 2);
}

// Verifies that two channels of one bot share the global key but not the route key.
TEST(ScopePathTest, DiscordChannelsShareOnlyTheToken) {
  ScopePath a = *BuildScopePath(Spec(Platform::kDiscord, "channels/1"));
  ScopePath b = *BuildScopePath(Spec(Platform::kDiscord, "channels/2"));
  EXPECT_EQ(a.keys[0], b.keys[0]);
  EXPECT_EQ(a.keys[1], b.keys[1]);
  EXPECT_NE(a.keys[2], b.keys[2]);
}

// Verifies that Discord targets other than channels/<id> and webhooks/<id>/<token> are refused.
TEST(ScopePathTest, RejectsBadDiscordTarget) {
  EXPECT_FALSE(BuildScopePath(Spec(Platform::kDiscord, "guilds/1")).has_value());
  EXPECT_FALSE(BuildScopePath(Spec(Platform::kDiscord, "webhooks/1")).has_value());
  EXPECT_TRUE(BuildScopePath(Spec(Platform::kDiscord, "webhooks/1/tok")).has_value());
}

// Verifies Slack (workspace > channel, Retry-After parks the workspace) and LINE paths.
TEST(ScopePathTest, SlackAndLinePaths) {
  ScopePath slack = *BuildScopePath(Spec(Platform::kSlack, "C123"));
  ASSERT_EQ(slack.size, 3);
  EXPECT_EQ(slack.budgets[1], BudgetName::kSlackWorkspace);
  EXPECT_EQ(slack.budgets[2], BudgetName::kSlackChannel);
  EXPECT_EQ(slack.retry_after_index, 1);
  ScopePath line_a = *BuildScopePath(Spec(Platform::kLine, "U1"));
  ScopePath line_b = *BuildScopePath(Spec(Platform::kLine, "U2"));
  ASSERT_EQ(line_a.size, 2);
  EXPECT_EQ(line_a.budgets[1], BudgetName::kLineChannel);
  EXPECT_EQ(line_a.keys[1], line_b.keys[1]);  // channel token + endpoint, not the user
}

// Verifies that the webhook key is per tenant and URL, and needs no credential.
TEST(ScopePathTest, WebhookKeyIsTenantAndUrl) {
  DestinationSpec spec = Spec(Platform::kWebhook, "https://example.com/hook", "");
  ScopePath a = *BuildScopePath(spec);
  spec.tenant = "other";
  ScopePath b = *BuildScopePath(spec);
  ASSERT_EQ(a.size, 2);
  EXPECT_EQ(a.budgets[1], BudgetName::kWebhookDestination);
  EXPECT_NE(a.keys[1], b.keys[1]);
  EXPECT_NE(a.keys[0], b.keys[0]);
}

// Verifies that hashing separates parts, so ("ab","c") and ("a","bc") differ.
TEST(ScopePathTest, HashSeparatesParts) {
  EXPECT_NE(HashScope(BudgetName::kSlackChannel, {"ab", "c"}),
            HashScope(BudgetName::kSlackChannel, {"a", "bc"}));
  EXPECT_NE(HashScope(BudgetName::kSlackChannel, {"a"}),
            HashScope(BudgetName::kSlackWorkspace, {"a"}));
}

}  // namespace
}  // namespace egress::pacing
