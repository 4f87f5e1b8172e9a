#include <algorithm>

#include <fmt/format.h>

#include "config/duration.h"
#include "config/toml_sections.h"

namespace egress::config {
namespace {

Status ReadQuota(const TomlFields& fields, QuotaConfig& out) {
  if (Status s = fields.CheckKeys({"limit", "window", "platforms", "mode"}); !s.ok()) {
    return s;
  }
  for (std::string_view key : {"limit", "window"}) {
    if (!fields.Has(key)) {
      return fields.TableError(fields.Field(key), key == "limit"
                                                      ? "missing (the units allowed per window)"
                                                      : "missing (e.g. \"30d\", \"24h\")");
    }
  }
  if (Status s = fields.ReadInt("limit", 1, kMaxQuotaLimit, out.limit); !s.ok()) {
    return s;
  }
  // Parsed here rather than by ReadDuration, whose cap (a year) is below the longest window.
  std::string text;
  if (Status s = fields.ReadString("window", text); !s.ok()) {
    return s;
  }
  const toml::node& window = *fields.table().get("window");
  Result<Millis> parsed = ParseDuration(text);
  if (!parsed) {
    return fields.Error(window, fields.Field("window"), parsed.error().message());
  }
  if (*parsed < kMinQuotaWindow || *parsed > kMaxQuotaWindow) {
    return fields.Error(window, fields.Field("window"),
                        fmt::format("must be from {} to {}", FormatDuration(kMinQuotaWindow),
                                    FormatDuration(kMaxQuotaWindow)));
  }
  out.window = *parsed;
  out.shadow = false;
  if (fields.Has("mode")) {
    std::string mode;
    if (Status s = fields.ReadString("mode", mode); !s.ok()) {
      return s;
    }
    if (mode != "enforce" && mode != "shadow") {
      return fields.Error(*fields.table().get("mode"), fields.Field("mode"),
                          "must be \"enforce\" or \"shadow\"");
    }
    out.shadow = mode == "shadow";
  }
  out.platforms.clear();
  if (!fields.Has("platforms")) {
    return Status::Ok();
  }
  const toml::node& node = *fields.table().get("platforms");
  const toml::array* list = node.as_array();
  if (list == nullptr) {
    return fields.Error(node, fields.Field("platforms"),
                        "must be a list of platforms, e.g. [\"line\", \"slack\"]");
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string field = fmt::format("{}[{}]", fields.Field("platforms"), i);
    const auto* text = list->get(i)->as_string();
    if (text == nullptr || !ParsePlatform(text->get())) {
      return fields.Error(*list->get(i), field, "must be slack, discord, line or webhook");
    }
    out.platforms.push_back(text->get());
  }
  std::sort(out.platforms.begin(), out.platforms.end());
  out.platforms.erase(std::unique(out.platforms.begin(), out.platforms.end()), out.platforms.end());
  return Status::Ok();
}

Status ReadTier(const TomlFields& fields, TierConfig& out) {
  if (Status s = fields.CheckKeys({"budgets", "quotas"}); !s.ok()) {
    return s;
  }
  Result<std::optional<TomlFields>> budgets = fields.Table("budgets");
  if (!budgets) {
    return budgets.error();
  }
  if (budgets->has_value()) {
    Status s = (*budgets)->ForEachTable([&](std::string_view name, const TomlFields& sub) {
      std::optional<pacing::BudgetName> budget = pacing::ParseBudgetName(name);
      if (!budget) {
        return (*budgets)->Error(sub.table(), sub.prefix(), "unknown budget");
      }
      pacing::Budget value = pacing::DefaultBudget(*budget);
      for (const auto& [n, b] : out.budgets) {
        if (n == *budget) {
          value = b;
        }
      }
      if (Status read = ReadBudgetTable(sub, value); !read.ok()) {
        return read;
      }
      std::erase_if(out.budgets, [&](const auto& e) { return e.first == *budget; });
      out.budgets.emplace_back(*budget, value);
      return Status::Ok();
    });
    if (!s.ok()) {
      return s;
    }
  }
  Result<std::optional<TomlFields>> quotas = fields.Table("quotas");
  if (!quotas) {
    return quotas.error();
  }
  if (quotas->has_value()) {
    return ReadQuotasTable(**quotas, out.quotas);
  }
  return Status::Ok();
}

}  // namespace

Status ReadQuotasTable(const TomlFields& quotas, QuotaMap& out) {
  QuotaMap read;
  Status s = quotas.ForEachTable([&](std::string_view name, const TomlFields& fields) {
    if (!ValidQuotaName(name)) {
      return quotas.Error(
          fields.table(), fields.prefix(),
          fmt::format("a quota name is 1 to {} of A-Z a-z 0-9 _ . -", kMaxQuotaNameBytes));
    }
    if (read.size() == kMaxQuotas) {
      return quotas.Error(fields.table(), fields.prefix(),
                          fmt::format("at most {} quotas", kMaxQuotas));
    }
    return ReadQuota(fields, read[std::string(name)]);
  });
  if (!s.ok()) {
    return s;
  }
  out = std::move(read);
  return Status::Ok();
}

Status ReadTiersSection(const TomlFields& tiers, Config& out) {
  return tiers.ForEachTable([&](std::string_view name, const TomlFields& fields) -> Status {
    if (!ValidQuotaName(name)) {
      return tiers.Error(
          fields.table(), fields.prefix(),
          fmt::format("a tier name is 1 to {} of A-Z a-z 0-9 _ . -", kMaxQuotaNameBytes));
    }
    return ReadTier(fields, out.tiers[std::string(name)]);
  });
}

}  // namespace egress::config
