#include "dispatcher/pacing/budget.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>

namespace egress::pacing {
namespace {

constexpr size_t kMaxBudgetNameBytes = 48;

// The names by number. A slot is written once, under mu, before `count` is raised past it
// (release); readers look only below `count` (acquire), so they never see a slot being written.
struct Names {
  std::mutex mu;
  std::array<std::string, kMaxBudgetNames> names;
  std::atomic<int> count{0};

  Names() {
    constexpr std::array<std::string_view, kBudgetNameCount> kBuiltin = {
        "tenant_egress",  "webhook_destination", "slack_workspace", "slack_channel",
        "discord_global", "discord_route",       "line_channel",    "tenant_intake",
    };
    for (size_t i = 0; i < kBuiltin.size(); ++i) {
      names[i] = kBuiltin[i];
    }
    count.store(kBudgetNameCount, std::memory_order_release);
  }
};

Names& Table() {
  static Names table;
  return table;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxBudgetNameBytes || name[0] < 'a' || name[0] > 'z') {
    return false;
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<BudgetName> RegisterBudgetName(std::string_view name) {
  if (std::optional<BudgetName> known = ParseBudgetName(name)) {
    return *known;
  }
  if (!ValidName(name)) {
    return Status::InvalidArgument(
        "a budget name is 1 to 48 of a-z, 0-9 and _, starting with a letter");
  }
  Names& table = Table();
  std::lock_guard<std::mutex> lock(table.mu);
  const int count = table.count.load(std::memory_order_relaxed);
  for (int i = 0; i < count; ++i) {
    if (table.names[i] == name) {
      return static_cast<BudgetName>(i);  // registered by another thread meanwhile
    }
  }
  if (count >= kMaxBudgetNames) {
    return Status::FailedPrecondition("more than 64 budget names");
  }
  table.names[count] = std::string(name);
  table.count.store(count + 1, std::memory_order_release);
  return static_cast<BudgetName>(count);
}

int BudgetNameCount() { return Table().count.load(std::memory_order_acquire); }

std::string_view BudgetNameString(BudgetName name) {
  const int i = static_cast<int>(name);
  return i < BudgetNameCount() ? std::string_view(Table().names[i]) : std::string_view("unknown");
}

std::optional<BudgetName> ParseBudgetName(std::string_view text) {
  Names& table = Table();
  const int count = BudgetNameCount();
  for (int i = 0; i < count; ++i) {
    if (table.names[i] == text) {
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
  return {1, 1000, 1};
}

}  // namespace egress::pacing
