// RELAY_EGRESS_<SECTION>_<KEY> variables as one more layer of the config (docs/configuration.md,
// "Environment overrides").

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "config/toml_sections.h"
#include "dispatcher/pacing/budget.h"

namespace egress::config {
namespace {

constexpr std::string_view kPrefix = "RELAY_EGRESS_";

// One table a variable may address: its name as it appears in a variable, lowercased
// ("platforms_slack_retry"), and its path in the config ({"platforms", "slack", "retry"}).
struct Section {
  std::string flat;
  std::vector<std::string> path;
};

std::vector<Section> Sections() {
  std::vector<Section> out = {{"server", {"server"}},
                              {"server_retention", {"server", "retention"}},
                              {"transport", {"transport"}},
                              {"cluster", {"cluster"}},
                              {"store", {"store"}}};
  for (const Platform platform : Platforms()) {
    const std::string p(PlatformString(platform));
    out.push_back({"platforms_" + p, {"platforms", p}});
    out.push_back({"platforms_" + p + "_retry", {"platforms", p, "retry"}});
  }
  for (int i = 0; i < pacing::BudgetNameCount(); ++i) {
    const std::string b(pacing::BudgetNameString(static_cast<pacing::BudgetName>(i)));
    out.push_back({"budgets_" + b, {"budgets", b}});
  }
  return out;
}

bool IsReserved(std::string_view name) {
  for (std::string_view reserved : kReservedEnv) {
    if (name == reserved) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::vector<EnvOverride>> ParseEnvOverrides(const Environment& environment) {
  std::vector<EnvOverride> out;
  const std::vector<Section> sections = Sections();
  for (const auto& [name, value] : environment) {
    if (!std::string_view(name).starts_with(kPrefix) || IsReserved(name)) {
      continue;
    }
    std::string flat = name.substr(kPrefix.size());
    bool upper = !flat.empty();
    for (char& c : flat) {
      upper = upper && (std::isupper(static_cast<unsigned char>(c)) != 0 ||
                        std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '_');
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (!upper) {
      return Status::InvalidArgument(fmt::format(
          "{}: an override is RELAY_EGRESS_<SECTION>_<KEY> in capitals, digits and _", name));
    }
    // The longest section the name starts with: "server_retention_dead" is server.retention.dead.
    const Section* best = nullptr;
    for (const Section& s : sections) {
      if (flat.size() > s.flat.size() + 1 && flat.starts_with(s.flat) &&
          flat[s.flat.size()] == '_' && (best == nullptr || s.flat.size() > best->flat.size())) {
        best = &s;
      }
    }
    if (best == nullptr) {
      return Status::InvalidArgument(fmt::format(
          "{}: names no overridable config section (server, server_retention, transport, "
          "platforms_<platform>[_retry], budgets_<budget>; tenants only in the file)",
          name));
    }
    out.push_back({.variable = name,
                   .path = best->path,
                   .key = flat.substr(best->flat.size() + 1),
                   .value = value});
  }
  std::sort(out.begin(), out.end(),
            [](const EnvOverride& a, const EnvOverride& b) { return a.variable < b.variable; });
  return out;
}

toml::table EnvOverrideTable(const EnvOverride& o) {
  toml::table root;
  toml::table* at = &root;
  for (const std::string& part : o.path) {
    at = at->insert_or_assign(part, toml::table{}).first->second.as_table();
  }
  at->insert_or_assign(o.key, o.value);
  return root;
}

}  // namespace egress::config
