// The relay-egress binary: `serve` runs the worker service (docs/architecture.md); the
// operator commands (deliveries, stats, destinations) live in dispatcher/cli (docs/cli.md).

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "adapters/trust_files.h"
#include "config/load_config.h"
#include "dispatcher/base/host_port.h"
#include "dispatcher/base/process_memory.h"
#include "dispatcher/base/version.h"
#include "dispatcher/cli/cli.h"
#include "dispatcher/service/api/http_server.h"
#include "dispatcher/service/event_log.h"
#include "dispatcher/service/serve.h"
#include "dispatcher/service/service_options_from_config.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

// What the command line says about configuration.
struct ConfigFlags {
  std::string config_path;
  std::string profiles_dir;
  std::string extra_profiles_dir;
  std::string listen;
  std::string data_dir;
};

// The config file serve reads: --config, else RELAY_EGRESS_CONFIG, else
// /etc/relay-egress/relay-egress.toml when it exists, else none (built-in defaults).
std::string ConfigPath(const ConfigFlags& flags) {
  if (!flags.config_path.empty()) {
    return flags.config_path;
  }
  if (const char* env = std::getenv(std::string(egress::config::kConfigPathEnv).c_str());
      env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  if (std::filesystem::exists(egress::config::kDefaultConfigPath, ec)) {
    return std::string(egress::config::kDefaultConfigPath);
  }
  return "";
}

// The config file over the built-in profiles (or --profiles-dir), the RELAY_EGRESS_* overrides,
// then --listen and --data-dir on top. Errors are "file:line: field: problem"
// (config/load_config.h).
// The operator's own profile platforms: --extra-profiles-dir, else the package's directory when
// it exists.
std::string ExtraProfilesDir(const ConfigFlags& flags) {
  if (!flags.extra_profiles_dir.empty()) {
    return flags.extra_profiles_dir;
  }
  std::error_code ec;
  return std::filesystem::is_directory(egress::config::kDefaultExtraProfilesDir, ec)
             ? std::string(egress::config::kDefaultExtraProfilesDir)
             : std::string();
}

egress::config::LoadOptions LoadOptionsFor(const ConfigFlags& flags) {
  return {.profiles_dir = flags.profiles_dir, .extra_profiles_dir = ExtraProfilesDir(flags)};
}

egress::Result<egress::config::Config> ResolveConfig(const ConfigFlags& flags) {
  auto loaded = egress::config::LoadConfig(ConfigPath(flags), LoadOptionsFor(flags));
  if (!loaded) {
    return loaded.error();
  }
  egress::config::Config config = std::move(*loaded);
  if (!flags.listen.empty()) {
    auto parsed = egress::ParseHostPort(flags.listen);
    if (!parsed) {
      return egress::Status::InvalidArgument("--listen: " + parsed.error().message());
    }
    config.server.listen = std::move(*parsed);
  }
  if (!flags.data_dir.empty()) {
    config.server.data_dir = flags.data_dir;
  }
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "relay-egress: durable, rate-limit-aware delivery to Slack, Discord, LINE and webhooks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "relay-egress " + std::string(egress::Version()));
  ConfigFlags flags;
  bool check_config = false;
  bool print_config = false;
  auto* serve = app.add_subcommand("serve", "Run the worker service");
  serve
      ->add_option("--config", flags.config_path,
                   "TOML config file (default: $RELAY_EGRESS_CONFIG, else "
                   "/etc/relay-egress/relay-egress.toml if it exists)")
      ->check(CLI::ExistingFile);
  serve->add_option("--profiles-dir", flags.profiles_dir,
                    "Platform profiles replacing the built-in ones (slack, discord, line, "
                    "webhook .toml, and every other <platform>.toml)");
  serve
      ->add_option("--extra-profiles-dir", flags.extra_profiles_dir,
                   "The operator's own profile platforms, one <platform>.toml each (default: "
                   "/etc/relay-egress/profiles.d if it exists)")
      ->check(CLI::ExistingDirectory);
  serve->add_option("--listen", flags.listen, "host:port (overrides server.listen)");
  serve->add_option("--data-dir", flags.data_dir, "Store directory (overrides server.data_dir)");
  auto* check_flag =
      serve->add_flag("--check-config", check_config, "Validate the config and exit");
  serve
      ->add_flag("--print-config", print_config,
                 "Print the configuration in force (files and RELAY_EGRESS_* overrides merged, "
                 "secrets redacted) and exit")
      ->excludes(check_flag);
  egress::cli::Commands commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (commands.Parsed()) {
    return commands.Run();
  }
  if (print_config) {
    auto text = egress::config::RenderConfig(ConfigPath(flags), LoadOptionsFor(flags));
    if (!text) {
      std::fprintf(stderr, "%s\n", text.error().message().c_str());
      return kExitUsage;
    }
    fmt::print("{}", *text);
    return kExitOk;
  }
  auto config = ResolveConfig(flags);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message().c_str());
    return kExitUsage;
  }
  // An open API only where no other host reaches it; --listen may have moved it.
  if (egress::Status open = egress::config::CheckAuthListen(config->server); !open.ok()) {
    std::fprintf(stderr, "%s\n", open.message().c_str());
    return kExitUsage;
  }
  if (!check_config && !config->server.core_dumps && !egress::DisableCoreDumps()) {
    std::fprintf(stderr, "cannot turn core dumps off (server.core_dumps = false)\n");
    return kExitUsage;
  }
  if (!check_config && std::getenv("TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES") == nullptr) {
    // 4 MiB, not gperftools' 32, unless the operator set it: 5-14 MiB less RSS at a million
    // queued for about 1.6% more CPU per delivery (bench/README.md, section 14).
    egress::LimitThreadCaches(size_t{4} << 20);
  }
  if (check_config) {
    // The listen address must resolve here as it will at start: a name that serve could not
    // bind fails now, not later.
    if (auto resolved = egress::service::ResolveListenAddress(config->server.listen); !resolved) {
      std::fprintf(stderr, "%s: %s\n", flags.listen.empty() ? "server.listen" : "--listen",
                   resolved.error().message().c_str());
      return kExitUsage;
    }
    if (egress::Status trust = egress::adapters::CheckTrustFiles(config->transport); !trust.ok()) {
      std::fprintf(stderr, "%s\n", trust.message().c_str());
      return kExitUsage;
    }
    for (const egress::Platform platform : config->Platforms()) {
      const egress::config::PlatformConfig& p = config->platform(platform);
      egress::Status trust = egress::adapters::CheckTrustFiles(
          "platforms." + std::string(egress::PlatformString(platform)), p.ca_file, p.ca_path);
      if (!trust.ok()) {
        std::fprintf(stderr, "%s\n", trust.message().c_str());
        return kExitUsage;
      }
    }
    const std::string path = ConfigPath(flags);
    fmt::print("{}: OK\n", path.empty() ? "built-in defaults" : path);
    return kExitOk;
  }
  egress::service::ConfigureEventLog(config->server.log_format, config->server.log_level);
  // SIGHUP: the budgets as the config files and variables say now (the flags stay as given).
  auto reload_budgets = [flags]() -> egress::Result<egress::service::Service::BudgetDefaults> {
    auto again = ResolveConfig(flags);
    if (!again) {
      return again.error();
    }
    return egress::service::ServiceOptionsFromConfig(*again).budget_defaults;
  };
  return egress::service::RunService(egress::service::ServiceOptionsFromConfig(*config),
                                     egress::Millis(10'000), reload_budgets);
}
