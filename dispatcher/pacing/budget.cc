#include "dispatcher/pacing/budget.h"

#include "dispatcher/base/name_table.h"

namespace egress::pacing {
namespace {

constexpr size_t kMaxBudgetNameBytes = 48;

NameTable<kMaxBudgetNames>& Table() {
  static NameTable<kMaxBudgetNames> table({
      "tenant_egress",
      "webhook_destination",
      "slack_workspace",
      "slack_channel",
      "discord_global",
      "discord_route",
      "line_channel",
      "tenant_intake",
  });
  return table;
}

}  // namespace

Result<BudgetName> RegisterBudgetName(std::string_view name) {
  if (std::optional<int> known = Table().Find(name)) {
    return static_cast<BudgetName>(*known);
  }
  if (!IsTableName(name, kMaxBudgetNameBytes)) {
    return Status::InvalidArgument(
        "a budget name is 1 to 48 of a-z, 0-9 and _, starting with a letter");
  }
  std::optional<int> added = Table().Add(name);
  if (!added) {
    return Status::FailedPrecondition("more than 64 budget names");
  }
  return static_cast<BudgetName>(*added);
}

int BudgetNameCount() { return Table().count(); }

std::string_view BudgetNameString(BudgetName name) { return Table().Name(static_cast<int>(name)); }

std::optional<BudgetName> ParseBudgetName(std::string_view text) {
  std::optional<int> found = Table().Find(text);
  return found ? std::optional<BudgetName>(static_cast<BudgetName>(*found)) : std::nullopt;
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
  return {1, 1000, 1};
}

}  // namespace egress::pacing
