// The definition of a profile platform ([platforms.<p>] request, auth, oauth2, response, rules
// and scopes): docs/platforms.md, "Profile platforms".

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "adapters/json_body.h"
#include "adapters/profile_adapter.h"
#include "config/toml_sections.h"

namespace egress::config {
namespace {

using adapters::ProfileAction;
using adapters::ProfileTemplate;
using adapters::ResetUnit;

// The lengths a profile's texts may have: far past any real platform's, short of harm.
constexpr size_t kMaxTemplateBytes = 2048;
constexpr size_t kMaxListEntries = 32;

Status ReadTemplate(const TomlFields& fields, std::string_view key, ProfileTemplate& out) {
  if (!fields.Has(key)) {
    return Status::Ok();
  }
  std::string text;
  if (Status status = fields.ReadString(key, text); !status.ok()) {
    return status;
  }
  const toml::node& node = *fields.table().get(key);
  if (text.size() > kMaxTemplateBytes) {
    return fields.Error(node, fields.Field(key), "longer than 2048 bytes");
  }
  Result<ProfileTemplate> parsed = ProfileTemplate::Parse(text);
  if (!parsed) {
    return fields.Error(node, fields.Field(key), parsed.error().message());
  }
  out = std::move(*parsed);
  return Status::Ok();
}

// A header or field name: printable ASCII without separators, 1 to 64 bytes.
bool IsToken(std::string_view name) {
  if (name.empty() || name.size() > 64) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c > 32 && c < 127 &&
           std::string_view("()<>@,;:\\\"/[]?={}").find(c) == std::string_view::npos;
  });
}

// A table of name = template (request headers, body fields), replacing `out`.
Status ReadTemplateTable(const TomlFields& fields, std::string_view key,
                         std::vector<std::pair<std::string, ProfileTemplate>>& out) {
  Result<std::optional<TomlFields>> table = fields.Table(key);
  if (!table) {
    return table.error();
  }
  if (!table->has_value()) {
    return Status::Ok();
  }
  const TomlFields& t = **table;
  std::vector<std::pair<std::string, ProfileTemplate>> read;
  for (auto&& [name, node] : t.table()) {
    const std::string field = t.Field(name.str());
    if (!IsToken(name.str())) {
      return t.Error(node, field, "a name of 1 to 64 printable bytes without separators");
    }
    if (read.size() >= kMaxListEntries) {
      return t.Error(node, field, "more than 32 entries");
    }
    ProfileTemplate value;
    if (Status status = ReadTemplate(t, name.str(), value); !status.ok()) {
      return status;
    }
    read.emplace_back(std::string(name.str()), std::move(value));
  }
  out = std::move(read);
  return Status::Ok();
}

Status ReadPointer(const TomlFields& fields, std::string_view key, std::string& out) {
  if (Status status = fields.ReadString(key, out); !status.ok()) {
    return status;
  }
  if (fields.Has(key) && (!adapters::IsJsonPointer(out) || out.size() > 256)) {
    return fields.Error(*fields.table().get(key), fields.Field(key),
                        "must be a JSON pointer (\"/a/b\", RFC 6901) of at most 256 bytes");
  }
  return Status::Ok();
}

Status ReadHeaderName(const TomlFields& fields, std::string_view key, std::string& out) {
  if (Status status = fields.ReadString(key, out); !status.ok()) {
    return status;
  }
  if (fields.Has(key) && !out.empty() && !IsToken(out)) {
    return fields.Error(*fields.table().get(key), fields.Field(key),
                        "must be a header name (1 to 64 printable bytes without separators)");
  }
  return Status::Ok();
}

Status ReadUnit(const TomlFields& fields, std::string_view key, bool epoch_allowed,
                ResetUnit& out) {
  std::string text;
  if (Status status = fields.ReadString(key, text); !status.ok() || !fields.Has(key)) {
    return status;
  }
  static constexpr std::array<std::pair<std::string_view, ResetUnit>, 4> kUnits = {{
      {"seconds", ResetUnit::kSeconds},
      {"milliseconds", ResetUnit::kMilliseconds},
      {"epoch_seconds", ResetUnit::kEpochSeconds},
      {"epoch_milliseconds", ResetUnit::kEpochMilliseconds},
  }};
  for (const auto& [name, unit] : kUnits) {
    if (name == text && (epoch_allowed || name.find("epoch") == std::string_view::npos)) {
      out = unit;
      return Status::Ok();
    }
  }
  return fields.Error(*fields.table().get(key), fields.Field(key),
                      epoch_allowed
                          ? "must be seconds, milliseconds, epoch_seconds or epoch_milliseconds"
                          : "must be seconds or milliseconds");
}

// An HTTP status (100..599) or a list of them.
Status ReadStatuses(const TomlFields& fields, std::string_view key, std::vector<int>& out) {
  const toml::node* node = fields.table().get(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  std::vector<int> read;
  const auto take = [&](const toml::node& n) {
    const auto* value = n.as_integer();
    if (value == nullptr || value->get() < 100 || value->get() > 599) {
      return false;
    }
    read.push_back(static_cast<int>(value->get()));
    return true;
  };
  bool ok = true;
  if (const toml::array* list = node->as_array()) {
    ok = !list->empty() && list->size() <= kMaxListEntries;
    for (const toml::node& n : *list) {
      ok = ok && take(n);
    }
  } else {
    ok = take(*node);
  }
  if (!ok) {
    return fields.Error(*node, fields.Field(key),
                        "must be an HTTP status (100 to 599) or a list of 1 to 32 of them");
  }
  out = std::move(read);
  return Status::Ok();
}

// Calls `fn` on every table of the array of tables `key` ([[...]]), named "<key>[i]".
Status ForEachArrayTable(const TomlFields& fields, std::string_view key,
                         const std::function<Status(const TomlFields&)>& fn) {
  const toml::node* node = fields.table().get(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const toml::array* list = node->as_array();
  if (list == nullptr || list->size() > kMaxListEntries) {
    return fields.Error(
        *node, fields.Field(key),
        fmt::format("must be an array of at most 32 tables ([[{}]])", fields.Field(key)));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::table* table = (*list)[i].as_table();
    const std::string field = fmt::format("{}[{}]", fields.Field(key), i);
    if (table == nullptr) {
      return fields.Error((*list)[i], field, "must be a table");
    }
    if (Status status = fn(TomlFields(*table, fields.file(), field)); !status.ok()) {
      return status;
    }
  }
  return Status::Ok();
}

Status ReadRequest(const TomlFields& f, adapters::ProfileSpec& spec) {
  Status status = f.CheckKeys({"method", "url", "headers", "body_fields", "content_type",
                               "destination_chars", "destination_max_bytes"});
  if (!status.ok()) {
    return status;
  }
  if (status = f.ReadString("method", spec.method); !status.ok()) {
    return status;
  }
  if (f.Has("method") && spec.method != "POST" && spec.method != "PUT" && spec.method != "PATCH") {
    return f.Error(*f.table().get("method"), f.Field("method"), "must be POST, PUT or PATCH");
  }
  if (status = ReadTemplate(f, "url", spec.url); !status.ok()) {
    return status;
  }
  if (f.Has("url") && !spec.url.text().starts_with("{base_url}") &&
      !spec.url.text().starts_with("https://") && !spec.url.text().starts_with("http://")) {
    return f.Error(*f.table().get("url"), f.Field("url"),
                   "must start with {base_url} or an absolute http(s):// URL");
  }
  if (status = ReadTemplateTable(f, "headers", spec.headers); !status.ok()) {
    return status;
  }
  if (status = ReadTemplateTable(f, "body_fields", spec.body_fields); !status.ok()) {
    return status;
  }
  if (status = f.ReadString("content_type", spec.content_type); !status.ok()) {
    return status;
  }
  if (status = f.ReadString("destination_chars", spec.destination_chars); !status.ok()) {
    return status;
  }
  if (f.Has("destination_chars")) {
    Result<std::array<bool, 256>> set = adapters::ParseByteSet(spec.destination_chars);
    if (!set || (*set)['/'] || (*set)['?'] || (*set)['#'] || (*set)['%']) {
      return f.Error(*f.table().get("destination_chars"), f.Field("destination_chars"),
                     set ? "may not allow / ? # or %" : set.error().message());
    }
  }
  int64_t max_bytes = static_cast<int64_t>(spec.destination_max_bytes);
  if (status = f.ReadInt("destination_max_bytes", 1, 1024, max_bytes); !status.ok()) {
    return status;
  }
  spec.destination_max_bytes = static_cast<size_t>(max_bytes);
  return Status::Ok();
}

Status ReadAuth(const TomlFields& f, adapters::ProfileSpec& spec) {
  Status status = f.CheckKeys({"header", "value"});
  if (!status.ok()) {
    return status;
  }
  if (status = ReadHeaderName(f, "header", spec.auth_header); !status.ok()) {
    return status;
  }
  return ReadTemplate(f, "value", spec.auth_value);
}

Status ReadOAuth2(const TomlFields& f, adapters::ProfileSpec& spec) {
  Status status = f.CheckKeys({"token_url", "scope", "refresh_before"});
  if (!status.ok()) {
    return status;
  }
  adapters::OAuth2Spec oauth2 = spec.oauth2.value_or(adapters::OAuth2Spec{});
  if (status = f.ReadString("token_url", oauth2.token_url); !status.ok()) {
    return status;
  }
  if (f.Has("token_url") && !oauth2.token_url.starts_with("https://") &&
      !oauth2.token_url.starts_with("http://")) {
    return f.Error(*f.table().get("token_url"), f.Field("token_url"),
                   "must be an absolute http:// or https:// URL");
  }
  if (status = f.ReadString("scope", oauth2.scope); !status.ok()) {
    return status;
  }
  if (status = f.ReadDuration("refresh_before", true, oauth2.refresh_before); !status.ok()) {
    return status;
  }
  spec.oauth2 = std::move(oauth2);
  return Status::Ok();
}

Status ReadResponse(const TomlFields& f, adapters::ProfileSpec& spec) {
  Status status = f.CheckKeys({"success_status", "success_pointer", "ref_pointer", "error_pointer",
                               "limit_header", "remaining_header", "reset_header", "reset_unit",
                               "retry_after_header", "retry_after_pointer", "retry_after_unit"});
  if (!status.ok()) {
    return status;
  }
  if (status = ReadStatuses(f, "success_status", spec.success_statuses); !status.ok()) {
    return status;
  }
  for (const auto& [key, out] : {std::pair{"success_pointer", &spec.success_pointer},
                                 std::pair{"ref_pointer", &spec.ref_pointer},
                                 std::pair{"error_pointer", &spec.error_pointer},
                                 std::pair{"retry_after_pointer", &spec.retry_after_pointer}}) {
    if (status = ReadPointer(f, key, *out); !status.ok()) {
      return status;
    }
  }
  for (const auto& [key, out] : {std::pair{"limit_header", &spec.limit_header},
                                 std::pair{"remaining_header", &spec.remaining_header},
                                 std::pair{"reset_header", &spec.reset_header},
                                 std::pair{"retry_after_header", &spec.retry_after_header}}) {
    if (status = ReadHeaderName(f, key, *out); !status.ok()) {
      return status;
    }
  }
  if (status = ReadUnit(f, "reset_unit", true, spec.reset_unit); !status.ok()) {
    return status;
  }
  return ReadUnit(f, "retry_after_unit", false, spec.retry_after_unit);
}

Status ReadRule(const TomlFields& f, adapters::ProfileRule& rule) {
  Status status = f.CheckKeys({"status", "body_contains", "action", "reason"});
  if (!status.ok()) {
    return status;
  }
  if (status = ReadStatuses(f, "status", rule.statuses); !status.ok()) {
    return status;
  }
  if (status = f.ReadString("body_contains", rule.body_contains); !status.ok()) {
    return status;
  }
  if (rule.body_contains.size() > 256) {
    return f.Error(*f.table().get("body_contains"), f.Field("body_contains"),
                   "longer than 256 bytes");
  }
  if (status = f.ReadString("reason", rule.reason); !status.ok()) {
    return status;
  }
  if (rule.reason.size() > 64 || !std::all_of(rule.reason.begin(), rule.reason.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
      })) {
    return f.Error(*f.table().get("reason"), f.Field("reason"),
                   "must be at most 64 of a-z, 0-9 and _");
  }
  std::string action;
  if (status = f.ReadString("action", action); !status.ok()) {
    return status;
  }
  if (!f.Has("action")) {
    return f.TableError(f.Field("action"),
                        "missing (delivered, retry, throttle, dead, disable_destination or "
                        "disable_credential)");
  }
  static constexpr std::array<std::pair<std::string_view, ProfileAction>, 6> kActions = {{
      {"delivered", ProfileAction::kDelivered},
      {"retry", ProfileAction::kRetry},
      {"throttle", ProfileAction::kThrottle},
      {"dead", ProfileAction::kDead},
      {"disable_destination", ProfileAction::kDisableDestination},
      {"disable_credential", ProfileAction::kDisableCredential},
  }};
  for (const auto& [name, value] : kActions) {
    if (name == action) {
      rule.action = value;
      return Status::Ok();
    }
  }
  return f.Error(*f.table().get("action"), f.Field("action"),
                 "must be delivered, retry, throttle, dead, disable_destination or "
                 "disable_credential");
}

Status ReadScope(const TomlFields& f, Platform platform, pacing::ScopeRule& rule) {
  Status status = f.CheckKeys({"budget", "key", "when_destination_starts_with", "park", "window"});
  if (!status.ok()) {
    return status;
  }
  std::string budget;
  if (status = f.ReadString("budget", budget); !status.ok()) {
    return status;
  }
  const std::string prefix = std::string(PlatformString(platform)) + "_";
  if (!f.Has("budget")) {
    return f.TableError(f.Field("budget"), fmt::format("missing (a name starting {})", prefix));
  }
  if (!budget.starts_with(prefix) || budget.size() == prefix.size()) {
    return f.Error(*f.table().get("budget"), f.Field("budget"),
                   fmt::format("must start with the platform's name: {}<name>", prefix));
  }
  Result<pacing::BudgetName> name = pacing::RegisterBudgetName(budget);
  if (!name) {
    return f.Error(*f.table().get("budget"), f.Field("budget"), name.error().message());
  }
  rule.budget = *name;
  const toml::node* key = f.table().get("key");
  const toml::array* parts = key == nullptr ? nullptr : key->as_array();
  if (parts == nullptr || parts->empty() || parts->size() > 3) {
    return key == nullptr
               ? f.TableError(f.Field("key"), "missing (a list of tenant, credential, destination)")
               : f.Error(*key, f.Field("key"),
                         "must be a list of 1 to 3 of tenant, credential, destination");
  }
  rule.key.clear();
  for (const toml::node& part : *parts) {
    const auto* text = part.as_string();
    const std::string_view value = text == nullptr ? std::string_view() : text->get();
    if (value == "tenant") {
      rule.key.push_back(pacing::ScopeKeyPart::kTenant);
    } else if (value == "credential") {
      rule.key.push_back(pacing::ScopeKeyPart::kCredential);
    } else if (value == "destination") {
      rule.key.push_back(pacing::ScopeKeyPart::kDestination);
    } else {
      return f.Error(part, f.Field("key"), "each part is tenant, credential or destination");
    }
  }
  if (status = f.ReadString("when_destination_starts_with", rule.when_destination_starts_with);
      !status.ok()) {
    return status;
  }
  if (status = f.ReadBool("window", rule.window); !status.ok()) {
    return status;
  }
  return f.ReadBool("park", rule.park);
}

}  // namespace

Status ReadProfileDefinition(const TomlFields& fields, Platform platform, PlatformConfig& out) {
  adapters::ProfileSpec spec = out.profile.value_or(adapters::ProfileSpec{});
  spec.platform = platform;
  using Reader = Status (*)(const TomlFields&, adapters::ProfileSpec&);
  for (const auto& [key, read] : {std::pair<std::string_view, Reader>{"request", &ReadRequest},
                                  std::pair<std::string_view, Reader>{"auth", &ReadAuth},
                                  std::pair<std::string_view, Reader>{"oauth2", &ReadOAuth2},
                                  std::pair<std::string_view, Reader>{"response", &ReadResponse}}) {
    Result<std::optional<TomlFields>> table = fields.Table(key);
    if (!table) {
      return table.error();
    }
    if (table->has_value()) {
      if (Status status = read(**table, spec); !status.ok()) {
        return status;
      }
    }
  }
  if (fields.Has("rules")) {
    std::vector<adapters::ProfileRule> rules;
    Status status = ForEachArrayTable(fields, "rules", [&](const TomlFields& f) {
      adapters::ProfileRule rule;
      Status read = ReadRule(f, rule);
      rules.push_back(std::move(rule));
      return read;
    });
    if (!status.ok()) {
      return status;
    }
    spec.rules = std::move(rules);
  }
  if (fields.Has("scopes")) {
    pacing::PlatformScopes scopes;
    int parks = 0;
    Status status = ForEachArrayTable(fields, "scopes", [&](const TomlFields& f) {
      pacing::ScopeRule rule;
      Status read = ReadScope(f, platform, rule);
      parks += rule.park ? 1 : 0;
      if (read.ok() && parks > 1) {
        return f.Error(*f.table().get("park"), f.Field("park"), "only one scope may park");
      }
      scopes.rules.push_back(std::move(rule));
      return read;
    });
    if (!status.ok()) {
      return status;
    }
    if (scopes.rules.empty() || scopes.rules.size() > pacing::kMaxScopes - 1) {
      return fields.Error(*fields.table().get("scopes"), fields.Field("scopes"),
                          fmt::format("must hold 1 to {} scopes", pacing::kMaxScopes - 1));
    }
    out.scopes = std::move(scopes);
  }
  out.profile = std::move(spec);
  return Status::Ok();
}

Status CheckProfileComplete(const TomlFields& fields, const PlatformConfig& platform) {
  if (!platform.profile || platform.profile->url.empty()) {
    return fields.TableError(fields.Field("request.url"),
                             "missing: a profile platform says where its requests go");
  }
  if (platform.scopes.rules.empty()) {
    return fields.TableError(fields.Field("scopes"),
                             "missing: a profile platform names at least one scope ([[scopes]])");
  }
  const adapters::ProfileSpec& spec = *platform.profile;
  if (spec.Uses(ProfileTemplate::Field::kAccessToken) &&
      (!spec.oauth2 || spec.oauth2->token_url.empty())) {
    return fields.TableError(fields.Field("oauth2.token_url"),
                             "missing: {access_token} needs [oauth2] token_url");
  }
  return Status::Ok();
}

}  // namespace egress::config
