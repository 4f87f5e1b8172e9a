// LoadConfig over toml++. Debian's toml++ is built with exceptions: parse errors are caught here,
// at the edge, and no exception leaves config/.

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "config/load_config.h"
#include "config/toml_sections.h"

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
  for (std::string_view key :
       {"admin_token", "token", "secrets", "secret", "api_keys", "password", "redis_url"}) {
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
  Status status =
      profile.has_value()
          ? root.CheckKeys({"platforms", "budgets"})
          : root.CheckKeys({"server", "transport", "platforms", "budgets", "tenants", "cluster"});
  if (!status.ok()) {
    return status;
  }
  for (std::string_view section :
       {"server", "transport", "platforms", "budgets", "tenants", "cluster"}) {
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
    } else if (section == "cluster") {
      status = ReadClusterSection(fields, config.cluster);
    } else {
      status = ReadTenantsSection(fields, config);
    }
    if (!status.ok()) {
      return status;
    }
  }
  return Status::Ok();
}

Status ApplyFile(const std::string& path, std::optional<Platform> profile, Config& config) {
  Result<std::string> text = ReadFile(path);
  if (!text) {
    return text.error();
  }
  Result<toml::table> table = Parse(path, *text);
  if (!table) {
    return table.error();
  }
  config.sources.push_back(path);
  return Apply(TomlFields(*table, path, ""), profile, config);
}

std::optional<std::string> ProcessEnv(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

}  // namespace

Result<Config> LoadConfig(const std::string& path, const LoadOptions& options) {
  Config config = DefaultConfig();
  const std::filesystem::path dir = options.profiles_dir.empty()
                                        ? std::filesystem::path(path).parent_path() / "profiles"
                                        : std::filesystem::path(options.profiles_dir);
  for (int i = 0; i < kPlatformCount; ++i) {
    const auto platform = static_cast<Platform>(i);
    const std::string file = (dir / fmt::format("{}.toml", PlatformString(platform))).string();
    if (Status status = ApplyFile(file, platform, config); !status.ok()) {
      return status;
    }
  }
  if (Status status = ApplyFile(path, std::nullopt, config); !status.ok()) {
    return status;
  }
  std::optional<std::string> token =
      options.getenv ? options.getenv(kAdminTokenEnv) : ProcessEnv(kAdminTokenEnv);
  if (token.has_value() && !token->empty()) {
    config.server.admin_token = *token;
  }
  std::optional<std::string> key =
      options.getenv ? options.getenv(kSecretsKeyEnv) : ProcessEnv(kSecretsKeyEnv);
  if (key.has_value()) {
    config.server.secrets_key_env = *key;
  }
  return config;
}

}  // namespace egress::config
