#include <limits>

#include <fmt/format.h>

#include "config/toml_sections.h"

namespace egress::config {
namespace {

using pacing::BudgetName;

// The profile platform of `config` whose scopes name `name`.
std::optional<Platform> ProfilePlatformOf(const Config& config, BudgetName name) {
  for (const Platform p : config.Platforms()) {
    for (const pacing::ScopeRule& rule : config.platform(p).scopes.rules) {
      if (rule.budget == name) {
        return p;
      }
    }
  }
  return std::nullopt;
}

// The platform whose profile sets a budget; nullopt for tenant-wide budgets (main file only).
std::optional<Platform> ProfileOf(const Config& config, BudgetName name) {
  if (static_cast<int>(name) >= pacing::kBudgetNameCount) {
    return ProfilePlatformOf(config, name);
  }
  switch (name) {
    case BudgetName::kWebhookDestination:
      return Platform::kWebhook;
    case BudgetName::kSlackWorkspace:
    case BudgetName::kSlackChannel:
      return Platform::kSlack;
    case BudgetName::kDiscordGlobal:
    case BudgetName::kDiscordRoute:
      return Platform::kDiscord;
    case BudgetName::kLineChannel:
      return Platform::kLine;
    case BudgetName::kTenantEgress:
    case BudgetName::kTenantIntake:
      return std::nullopt;
  }
  return std::nullopt;
}

// Whether `config` uses `name`: a compiled-in budget, or one a profile platform's scopes name.
bool Uses(const Config& config, BudgetName name) {
  return static_cast<int>(name) < pacing::kBudgetNameCount ||
         ProfilePlatformOf(config, name).has_value();
}

std::string KnownBudgets(const Config& config) {
  std::string names;
  for (int i = 0; i < pacing::BudgetNameCount(); ++i) {
    if (Uses(config, static_cast<BudgetName>(i))) {
      names += (names.empty() ? "" : ", ");
      names += pacing::BudgetNameString(static_cast<BudgetName>(i));
    }
  }
  return names;
}

}  // namespace

Status ReadBudgetTable(const TomlFields& fields, pacing::Budget& out) {
  Status status = fields.CheckKeys({"limit", "scale_ms", "burst"});
  if (!status.ok()) {
    return status;
  }
  pacing::Budget budget = out;
  if (status = fields.ReadInt("limit", 1, pacing::kMaxBudgetLimit, budget.limit); !status.ok()) {
    return status;
  }
  if (status = fields.ReadInt("scale_ms", 1, pacing::kMaxBudgetScaleMs, budget.scale_ms);
      !status.ok()) {
    return status;
  }
  if (status = fields.ReadInt("burst", 1, pacing::kMaxBudgetBurst, budget.burst); !status.ok()) {
    return status;
  }
  out = budget;
  return Status::Ok();
}

Status ReadBudgetsSection(const TomlFields& budgets, std::optional<Platform> only, Config& out) {
  return budgets.ForEachTable([&](std::string_view name, const TomlFields& fields) -> Status {
    std::optional<BudgetName> budget = pacing::ParseBudgetName(name);
    if (!budget.has_value() || !Uses(out, *budget)) {
      return budgets.Error(fields.table(), fields.prefix(),
                           fmt::format("unknown budget (known: {})", KnownBudgets(out)));
    }
    if (only.has_value() && ProfileOf(out, *budget) != only) {
      return budgets.Error(fields.table(), fields.prefix(),
                           fmt::format("the {} profile may set only its own platform's budgets",
                                       PlatformString(*only)));
    }
    return ReadBudgetTable(fields, out.budget(*budget));
  });
}

}  // namespace egress::config
