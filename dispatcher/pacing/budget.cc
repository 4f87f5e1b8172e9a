#include "dispatcher/pacing/budget.h"

#include <array>

namespace egress::pacing {
namespace {

constexpr std::array<std::string_view, kBudgetNameCount> kNames = {
    "tenant_egress",  "webhook_destination", "slack_workspace", "slack_channel",
    "discord_global", "discord_route",       "line_channel",    "tenant_intake",
};

}  // namespace

std::string_view BudgetNameString(BudgetName name) { return kNames[static_cast<size_t>(name)]; }

std::optional<BudgetName> ParseBudgetName(std::string_view text) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == text) {
      return static_cast<BudgetName>(i);
    }
  }
  return std::nullopt;
}

Budget DefaultBudget(BudgetName name) {
  switch (name) {
    case BudgetName::kTenantEgress:
      return {1000, 1000, 1};
    case BudgetName::kWebhookDestination:
      return {50, 1000, 1};
    case BudgetName::kSlackWorkspace:
      return {300, 60000, 1};
    case BudgetName::kSlackChannel:
      return {1, 1000, 3};
    case BudgetName::kDiscordGlobal:
      return {50, 1000, 1};
    case BudgetName::kDiscordRoute:
      return {5, 5000, 1};
    case BudgetName::kLineChannel:
      return {2000, 1000, 1};
    case BudgetName::kTenantIntake:
      return {1000, 1000, 1};
  }
  return {};
}

}  // namespace egress::pacing
