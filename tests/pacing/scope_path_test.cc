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

// A profile platform registered for these tests and its budgets.
struct TestChat {
  Platform platform = *RegisterPlatform("test_chat");
  BudgetName bot = *RegisterBudgetName("test_chat_bot");
  BudgetName group = *RegisterBudgetName("test_chat_group");
  BudgetName chat = *RegisterBudgetName("test_chat_chat");

  // Telegram's shape: the bot, groups (destinations starting with '-'), then every chat, parked
  // by Retry-After.
  PlatformScopes Scopes() const {
    PlatformScopes scopes;
    scopes.rules.push_back({.budget = bot, .key = {ScopeKeyPart::kCredential}});
    scopes.rules.push_back({.budget = group,
                            .key = {ScopeKeyPart::kCredential, ScopeKeyPart::kDestination},
                            .when_destination_starts_with = "-",
                            .window = true});
    scopes.rules.push_back({.budget = chat,
                            .key = {ScopeKeyPart::kCredential, ScopeKeyPart::kDestination},
                            .park = true});
    return scopes;
  }
};

// Verifies a profile platform's path: tenant_egress, then the rules that apply in their order;
// a group passes the conditional rule, a private chat skips it; the credential scope is the
// rule keyed by the credential alone, Retry-After parks the rule marked park, the leaf is last.
TEST(ScopePathTest, ProfileRulesApplyInOrder) {
  const TestChat t;
  Result<ScopePath> group = BuildScopePath(Spec(t.platform, "-100200"), t.Scopes());
  ASSERT_TRUE(group.has_value()) << group.error().ToString();
  ASSERT_EQ(group->size, 4);
  EXPECT_EQ(group->budgets[0], BudgetName::kTenantEgress);
  EXPECT_EQ(group->budgets[1], t.bot);
  EXPECT_EQ(group->budgets[2], t.group);
  EXPECT_EQ(group->budgets[3], t.chat);
  EXPECT_EQ(group->credential_index, 1);
  EXPECT_EQ(group->retry_after_index, 3);
  EXPECT_EQ(group->leaf_index, 3);
  Result<ScopePath> private_chat = BuildScopePath(Spec(t.platform, "4242"), t.Scopes());
  ASSERT_TRUE(private_chat.has_value()) << private_chat.error().ToString();
  ASSERT_EQ(private_chat->size, 3);
  EXPECT_EQ(private_chat->budgets[1], t.bot);
  EXPECT_EQ(private_chat->budgets[2], t.chat);
  EXPECT_EQ(private_chat->credential_index, 1);
  EXPECT_EQ(private_chat->retry_after_index, 2);
  EXPECT_EQ(private_chat->leaf_index, 2);
}

// Verifies a profile scope's key is HashScope over its budget and parts, in the rule's order:
// deterministic, shared where the parts are (the bot across chats), and different per budget
// even over the same parts (the group's and the chat's keys of one chat).
TEST(ScopePathTest, ProfileKeysAreDeterministicAndPerBudget) {
  const TestChat t;
  ScopePath a = *BuildScopePath(Spec(t.platform, "-1", "bot-1"), t.Scopes());
  ScopePath again = *BuildScopePath(Spec(t.platform, "-1", "bot-1"), t.Scopes());
  ScopePath other_chat = *BuildScopePath(Spec(t.platform, "-2", "bot-1"), t.Scopes());
  ScopePath other_bot = *BuildScopePath(Spec(t.platform, "-1", "bot-2"), t.Scopes());
  EXPECT_EQ(a.keys, again.keys);
  EXPECT_EQ(a.keys[0], HashScope(BudgetName::kTenantEgress, {"acme"}));
  EXPECT_EQ(a.keys[1], HashScope(t.bot, {"bot-1"}));
  EXPECT_EQ(a.keys[2], HashScope(t.group, {"bot-1", "-1"}));
  EXPECT_EQ(a.keys[3], HashScope(t.chat, {"bot-1", "-1"}));
  EXPECT_NE(a.keys[2], a.keys[3]);
  EXPECT_EQ(a.keys[1], other_chat.keys[1]);
  EXPECT_NE(a.keys[2], other_chat.keys[2]);
  EXPECT_NE(a.keys[3], other_chat.keys[3]);
  EXPECT_NE(a.keys[1], other_bot.keys[1]);
  EXPECT_NE(a.keys[3], other_bot.keys[3]);
  // Tenant and destination parts, in the order the rule names them.
  PlatformScopes by_tenant;
  by_tenant.rules.push_back(
      {.budget = t.chat, .key = {ScopeKeyPart::kDestination, ScopeKeyPart::kTenant}});
  ScopePath tenant = *BuildScopePath(Spec(t.platform, "42", "bot-1"), by_tenant);
  EXPECT_EQ(tenant.keys[1], HashScope(t.chat, {"42", "acme"}));
  DestinationSpec other_tenant = Spec(t.platform, "42", "bot-1");
  other_tenant.tenant = "globex";
  EXPECT_NE(BuildScopePath(other_tenant, by_tenant)->keys[1], tenant.keys[1]);
}

// Verifies the defaults without a credential-only rule or a park: the credential scope, the
// Retry-After scope and the leaf are all the last scope.
TEST(ScopePathTest, ProfileWithoutCredentialScopeOrParkUsesTheLeaf) {
  const TestChat t;
  PlatformScopes scopes;
  scopes.rules.push_back({.budget = t.group, .key = {ScopeKeyPart::kTenant}});
  scopes.rules.push_back(
      {.budget = t.chat, .key = {ScopeKeyPart::kCredential, ScopeKeyPart::kDestination}});
  ScopePath path = *BuildScopePath(Spec(t.platform, "c1"), scopes);
  ASSERT_EQ(path.size, 3);
  EXPECT_EQ(path.credential_index, 2);
  EXPECT_EQ(path.retry_after_index, 2);
  EXPECT_EQ(path.leaf_index, 2);
  // A park on an outer scope: Retry-After parks it, the leaf stays last.
  scopes.rules[0].park = true;
  ScopePath parked = *BuildScopePath(Spec(t.platform, "c1"), scopes);
  EXPECT_EQ(parked.retry_after_index, 1);
  EXPECT_EQ(parked.leaf_index, 2);
}

// Verifies a path holds tenant_egress and five profile scopes; a sixth that applies is
// InvalidArgument, one that does not apply is no problem.
TEST(ScopePathTest, ProfileScopesAreBounded) {
  const TestChat t;
  PlatformScopes five;
  for (int i = 0; i < 5; ++i) {
    five.rules.push_back({.budget = t.chat, .key = {ScopeKeyPart::kDestination}});
  }
  Result<ScopePath> full = BuildScopePath(Spec(t.platform, "42"), five);
  ASSERT_TRUE(full.has_value()) << full.error().ToString();
  EXPECT_EQ(full->size, kMaxScopes);
  PlatformScopes six = five;
  six.rules.push_back({.budget = t.group,
                       .key = {ScopeKeyPart::kDestination},
                       .when_destination_starts_with = "-"});
  EXPECT_TRUE(BuildScopePath(Spec(t.platform, "42"), six).has_value());
  Result<ScopePath> over = BuildScopePath(Spec(t.platform, "-42"), six);
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code(), Status::Code::kInvalidArgument);
}

// Verifies a profile platform with no rule for a destination (none at all, or only conditional
// ones that do not apply) or without a credential is InvalidArgument.
TEST(ScopePathTest, ProfileWithoutApplicableRuleIsRefused) {
  const TestChat t;
  Result<ScopePath> none = BuildScopePath(Spec(t.platform, "42"));
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(none.error().message(), "platform test_chat has no scope for this destination");
  PlatformScopes groups_only;
  groups_only.rules.push_back({.budget = t.group,
                               .key = {ScopeKeyPart::kDestination},
                               .when_destination_starts_with = "-"});
  EXPECT_FALSE(BuildScopePath(Spec(t.platform, "42"), groups_only).has_value());
  EXPECT_TRUE(BuildScopePath(Spec(t.platform, "-42"), groups_only).has_value());
  Result<ScopePath> no_credential = BuildScopePath(Spec(t.platform, "42", ""), t.Scopes());
  ASSERT_FALSE(no_credential.has_value());
  EXPECT_EQ(no_credential.error().code(), Status::Code::kInvalidArgument);
}

// Verifies the built-in platforms keep their compiled-in paths whatever scopes are passed.
TEST(ScopePathTest, BuiltinPlatformsIgnoreProfileScopes) {
  const TestChat t;
  ScopePath slack = *BuildScopePath(Spec(Platform::kSlack, "C1"), t.Scopes());
  ASSERT_EQ(slack.size, 3);
  EXPECT_EQ(slack.budgets[1], BudgetName::kSlackWorkspace);
  EXPECT_EQ(slack.budgets[2], BudgetName::kSlackChannel);
}

}  // namespace
}  // namespace egress::pacing
