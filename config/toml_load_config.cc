// LoadConfig over toml++. Debian's toml++ is built with exceptions: parse errors are caught here,
// at the edge, and no exception leaves config/.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/builtin_profiles.h"
#include "config/cluster_options.h"
#include "config/load_config.h"
#include "config/toml_sections.h"
#include "dispatcher/base/redact.h"
#include "storage/pg_connection.h"

namespace egress::config {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Status::InvalidArgument(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  }
  return text.str();
}

// True when line `line` (1-based) of `text` assigns a secret key, whose value a syntax error
// description might quote.
bool LineHoldsSecret(std::string_view text, uint32_t line) {
  size_t begin = 0;
  for (uint32_t i = 1; i < line && begin != std::string_view::npos; ++i) {
    begin = text.find('\n', begin);
    begin = begin == std::string_view::npos ? begin : begin + 1;
  }
  if (begin == std::string_view::npos) {
    return false;
  }
  std::string_view row = text.substr(begin, text.find('\n', begin) - begin);
  row.remove_prefix(std::min(row.find_first_not_of(" \t"), row.size()));
  for (std::string_view key : {"admin_token", "token", "secrets", "secret", "client_secret",
                               "api_keys", "password", "redis_url", "url"}) {
    if (row.substr(0, key.size()) == key) {
      std::string_view rest = row.substr(key.size());
      rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
      if (!rest.empty() && rest.front() == '=') {
        return true;
      }
    }
  }
  return false;
}

Result<toml::table> Parse(const std::string& path, const std::string& text) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& err) {
    const uint32_t line = err.source().begin.line;
    const std::string problem = LineHoldsSecret(text, line)
                                    ? std::string(
                                          "invalid TOML (details withheld: the line "
                                          "holds a secret)")
                                    : std::string(err.description());
    return Status::InvalidArgument(fmt::format("{}:{}: syntax: {}", path, line, problem));
  }
}

// Applies one file's root table. `profile` restricts a profile to its own platform.
Status Apply(const TomlFields& root, std::optional<Platform> profile, Config& config) {
  Status status = profile.has_value()
                      ? root.CheckKeys({"platforms", "budgets"})
                      : root.CheckKeys({"server", "transport", "platforms", "budgets", "tiers",
                                        "tenants", "cluster", "store"});
  if (!status.ok()) {
    return status;
  }
  for (std::string_view section :
       {"server", "transport", "platforms", "budgets", "tiers", "tenants", "cluster", "store"}) {
    Result<std::optional<TomlFields>> table = root.Table(section);
    if (!table) {
      return table.error();
    }
    if (!table->has_value()) {
      continue;
    }
    const TomlFields& fields = **table;
    if (section == "server") {
      status = ReadServerSection(fields, config.server);
    } else if (section == "transport") {
      status = ReadTransportSection(fields, config.transport);
    } else if (section == "platforms") {
      status = ReadPlatformsSection(fields, profile, config);
    } else if (section == "budgets") {
      status = ReadBudgetsSection(fields, profile, config);
    } else if (section == "tiers") {
      status = ReadTiersSection(fields, config);
    } else if (section == "cluster") {
      status = ReadClusterSection(fields, config.cluster);
    } else if (section == "store") {
      status = ReadStoreSection(fields, config.store);
    } else {
      status = ReadTenantsSection(fields, config);
    }
    if (!status.ok()) {
      return status;
    }
  }
  return Status::Ok();
}

// A layer merged into `merged` (for RenderConfig): tables merge key by key, anything else
// replaces what was there.
void Merge(const toml::table& layer, toml::table& merged) {
  for (auto&& [key, node] : layer) {
    if (const toml::table* sub = node.as_table(); sub != nullptr) {
      toml::node* have = merged.get(key);
      if (have == nullptr || !have->is_table()) {
        merged.insert_or_assign(key, toml::table{});
        have = merged.get(key);
      }
      Merge(*sub, *have->as_table());
      continue;
    }
    merged.insert_or_assign(key, node);
  }
}

// An override as RenderConfig shows it: an integer or a boolean when the value reads as one and
// the key held no string before (a variable's value is always text), else the text.
toml::table Typed(const EnvOverride& o, const toml::table& merged) {
  toml::table root = EnvOverrideTable(o);
  toml::table* at = &root;
  const toml::table* was = &merged;
  for (const std::string& part : o.path) {
    at = at->get(part)->as_table();
    const toml::node* next = was != nullptr ? was->get(part) : nullptr;
    was = next != nullptr ? next->as_table() : nullptr;
  }
  const toml::node* before = was != nullptr ? was->get(o.key) : nullptr;
  if (before != nullptr && before->is_string()) {
    return root;
  }
  int64_t number = 0;
  const char* end = o.value.data() + o.value.size();
  if (auto [ptr, ec] = std::from_chars(o.value.data(), end, number);
      !o.value.empty() && ec == std::errc() && ptr == end) {
    at->insert_or_assign(o.key, number);
  } else if (o.value == "true" || o.value == "false") {
    at->insert_or_assign(o.key, o.value == "true");
  }
  return root;
}

// What LoadConfig builds and, when `merged` is set, every layer merged as RenderConfig shows it.
class Layers {
 public:
  Layers(Config& config, toml::table* merged) : config_(config), merged_(merged) {}

  // One file or built-in text. `profile` restricts a profile to its own platform.
  Status ApplyText(const std::string& name, const std::string& text,
                   std::optional<Platform> profile) {
    Result<toml::table> table = Parse(name, text);
    if (!table) {
      return table.error();
    }
    config_.sources.push_back(name);
    if (Status status = Apply(TomlFields(*table, name, ""), profile, config_); !status.ok()) {
      return status;
    }
    if (merged_ != nullptr) {
      Merge(*table, *merged_);
    }
    return Status::Ok();
  }

  Status ApplyFile(const std::string& path, std::optional<Platform> profile) {
    Result<std::string> text = ReadFile(path);
    if (!text) {
      return text.error();
    }
    return ApplyText(path, *text, profile);
  }

  Status ApplyEnv(const Environment& environment) {
    Result<std::vector<EnvOverride>> overrides = ParseEnvOverrides(environment);
    if (!overrides) {
      return overrides.error();
    }
    for (const EnvOverride& o : *overrides) {
      const toml::table table = EnvOverrideTable(o);
      Status status = Apply(TomlFields(table, o.variable, "", true), std::nullopt, config_);
      if (!status.ok()) {
        return status;
      }
      if (merged_ != nullptr) {
        Merge(Typed(o, *merged_), *merged_);
      }
    }
    if (!overrides->empty()) {
      config_.sources.push_back("environment");
    }
    return Status::Ok();
  }

 private:
  Config& config_;
  toml::table* merged_;
};

std::optional<std::string> ProcessEnv(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

Environment ProcessEnvironment() {
  Environment out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string_view::npos) {
      out.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
  }
  return out;
}

// The keys whose values RenderConfig never shows, wherever they are.
bool IsSecretKey(std::string_view key) {
  for (std::string_view secret :
       {"admin_token", "token", "secret", "secrets", "client_secret", "api_keys", "password"}) {
    if (key == secret) {
      return true;
    }
  }
  return false;
}

constexpr std::string_view kRedactedValue = "(redacted)";

void RedactSecrets(toml::table& table) {
  std::vector<std::pair<std::string, bool>> secrets;  // key, whether a list
  for (auto&& [key, node] : table) {
    if (IsSecretKey(key.str())) {
      secrets.emplace_back(std::string(key.str()), node.is_array());
    } else if (toml::table* sub = node.as_table(); sub != nullptr) {
      RedactSecrets(*sub);
    } else if (toml::value<std::string>* text = node.as_string();
               text != nullptr && key.str() == "redis_url") {
      *text = RedactRedisUrl(text->get());
    } else if (toml::value<std::string>* text = node.as_string();
               text != nullptr && key.str() == "url") {
      // [store] url: a libpq URI or key=value string, its password taken out.
      *text = storage::RedactConninfo(text->get());
    } else if (toml::value<std::string>* text = node.as_string(); text != nullptr) {
      // URLs with userinfo or a query, webhook paths (dispatcher/base/redact.h).
      *text = RedactText(text->get());
    }
  }
  for (const auto& [key, is_list] : secrets) {
    if (is_list) {
      table.insert_or_assign(key, toml::array{std::string(kRedactedValue)});
    } else {
      table.insert_or_assign(key, std::string(kRedactedValue));
    }
  }
}

bool IsBuiltinPlatformName(std::string_view name) {
  for (int i = 0; i < kBuiltinPlatformCount; ++i) {
    if (PlatformString(static_cast<Platform>(i)) == name) {
      return true;
    }
  }
  return false;
}

// The *.toml files of `dir` other than the compiled-in platforms' four, sorted by name; an
// unreadable directory is an error naming it.
Result<std::vector<std::filesystem::path>> ProfileFiles(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::filesystem::path& file = it->path();
    if (file.extension() == ".toml" && !IsBuiltinPlatformName(file.stem().string()) &&
        it->is_regular_file(ec)) {
      out.push_back(file);
    }
  }
  if (ec) {
    return Status::InvalidArgument(fmt::format("{}: cannot read: {}", dir, ec.message()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One profile platform's file: its name is the platform's (registered here); it must define it.
Status ApplyProfilePlatform(Layers& layers, const Config& config, const std::string& source,
                            std::string_view name, const std::string* text) {
  Result<Platform> platform = RegisterPlatform(name);
  if (!platform) {
    return Status::InvalidArgument(fmt::format("{}: the file's name is the platform's: {}", source,
                                               platform.error().message()));
  }
  Status status = text != nullptr ? layers.ApplyText(source, *text, *platform)
                                  : layers.ApplyFile(source, *platform);
  if (status.ok() && !config.Defines(*platform)) {
    return Status::InvalidArgument(fmt::format(
        "{}: defines no [platforms.{}] (a profile platform's file defines it)", source, name));
  }
  return status;
}

Status LoadLayers(const std::string& path, const LoadOptions& options, Config& config,
                  toml::table* merged) {
  Layers layers(config, merged);
  for (int i = 0; i < kBuiltinPlatformCount; ++i) {
    const auto platform = static_cast<Platform>(i);
    const std::string name = fmt::format("{}.toml", PlatformString(platform));
    Status status =
        options.profiles_dir.empty()
            ? layers.ApplyText("(built-in) profiles/" + name,
                               std::string(BuiltinProfile(PlatformString(platform))), platform)
            : layers.ApplyFile((std::filesystem::path(options.profiles_dir) / name).string(),
                               platform);
    if (!status.ok()) {
      return status;
    }
  }
  // The profile platforms: the shipped ones (or those of profiles_dir), then the operator's own.
  if (options.profiles_dir.empty()) {
    for (std::string_view name : BuiltinProfileNames()) {
      if (!IsBuiltinPlatformName(name)) {
        const std::string text(BuiltinProfile(name));
        Status status = ApplyProfilePlatform(
            layers, config, fmt::format("(built-in) profiles/{}.toml", name), name, &text);
        if (!status.ok()) {
          return status;
        }
      }
    }
  }
  for (const std::string& dir : {options.profiles_dir, options.extra_profiles_dir}) {
    if (dir.empty()) {
      continue;
    }
    Result<std::vector<std::filesystem::path>> files = ProfileFiles(dir);
    if (!files) {
      return files.error();
    }
    for (const std::filesystem::path& file : *files) {
      if (ParsePlatform(file.stem().string()) &&
          config.Defines(*ParsePlatform(file.stem().string()))) {
        return Status::InvalidArgument(
            fmt::format("{}: platform {} is defined already", file.string(), file.stem().string()));
      }
      Status status =
          ApplyProfilePlatform(layers, config, file.string(), file.stem().string(), nullptr);
      if (!status.ok()) {
        return status;
      }
    }
  }
  if (!path.empty()) {
    if (Status status = layers.ApplyFile(path, std::nullopt); !status.ok()) {
      return status;
    }
  }
  if (Status status =
          layers.ApplyEnv(options.environment ? options.environment() : ProcessEnvironment());
      !status.ok()) {
    return status;
  }
  for (const Platform p : config.Platforms()) {
    const std::optional<adapters::ProfileSpec>& profile = config.platform(p).profile;
    if (profile && config.platform(p).base_url.empty() &&
        profile->url.Uses(adapters::ProfileTemplate::Field::kBaseUrl)) {
      return Status::InvalidArgument(fmt::format(
          "platforms.{}.base_url: missing: its request url uses {{base_url}} (set it in its "
          "profile or the main file)",
          PlatformString(p)));
    }
  }
  if (config.cluster.budget_store == BudgetStoreKind::kDynamoDb) {
    DynamoDbTable& dynamodb = config.cluster.dynamodb;
    Result<adapters::AwsCredentials> credentials =
        dynamodb.credentials_file.empty()
            ? adapters::AwsCredentialsFromEnv([&](std::string_view name) {
                return options.getenv ? options.getenv(name) : ProcessEnv(name);
              })
            : adapters::ReadAwsCredentialsFile(dynamodb.credentials_file, dynamodb.profile);
    if (!credentials) {
      return Status::InvalidArgument("cluster.dynamodb: " + credentials.error().message());
    }
    dynamodb.credentials = std::move(*credentials);
  }
  std::optional<std::string> token =
      options.getenv ? options.getenv(kAdminTokenEnv) : ProcessEnv(kAdminTokenEnv);
  if (token.has_value() && !token->empty()) {
    config.server.admin_token = *token;
    if (merged != nullptr) {
      toml::table server;
      server.insert_or_assign("admin_token", *token);
      toml::table root;
      root.insert_or_assign("server", std::move(server));
      Merge(root, *merged);
    }
  }
  std::optional<std::string> key =
      options.getenv ? options.getenv(kSecretsKeyEnv) : ProcessEnv(kSecretsKeyEnv);
  if (key.has_value()) {
    config.server.secrets_key_env = *key;
  }
  return Status::Ok();
}

}  // namespace

Result<Config> LoadConfig(const std::string& path, const LoadOptions& options) {
  Config config = DefaultConfig();
  if (Status status = LoadLayers(path, options, config, nullptr); !status.ok()) {
    return status;
  }
  return config;
}

Result<std::string> RenderConfig(const std::string& path, const LoadOptions& options) {
  Config config = DefaultConfig();
  toml::table merged;
  if (Status status = LoadLayers(path, options, config, &merged); !status.ok()) {
    return status;
  }
  RedactSecrets(merged);
  std::ostringstream out;
  out << "# The effective configuration: " << fmt::format("{}", fmt::join(config.sources, ", "))
      << ".\n# Keys not shown have their built-in defaults (docs/configuration.md); secrets are "
         "shown as \"(redacted)\".\n"
      << toml::toml_formatter(merged) << "\n";
  return out.str();
}

}  // namespace egress::config
