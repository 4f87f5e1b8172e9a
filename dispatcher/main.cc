// The relay-egress binary. Today: `serve` opens the durable store (recovering in-flight work)
// and reports what it holds; `stats` prints counts by state. The HTTP intake, the dispatcher
// loop and the operator CLI are built in later steps (see docs/architecture.md).

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <utility>

#include "config/listen_address.h"
#include "config/load_config.h"
#include "dispatcher/clock.h"
#include "storage/rocks_queue_store.h"

namespace {

using egress::storage::DeliveryState;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;

// What the command line says about configuration.
struct ConfigFlags {
  std::string config_path;
  std::string profiles_dir;
  std::string listen;
  std::string data_dir;
};

// The config file over the shipped profiles (built-in defaults without --config), then
// --listen and --data-dir on top. Errors are "file:line: field: problem" (config/load_config.h).
egress::Result<egress::config::Config> ResolveConfig(const ConfigFlags& flags) {
  egress::config::Config config = egress::config::DefaultConfig();
  if (!flags.config_path.empty()) {
    auto loaded =
        egress::config::LoadConfig(flags.config_path, {.profiles_dir = flags.profiles_dir});
    if (!loaded) {
      return loaded.error();
    }
    config = std::move(*loaded);
  }
  if (!flags.listen.empty()) {
    if (auto parsed = egress::config::ParseListenAddress(flags.listen); !parsed) {
      return egress::Status::InvalidArgument("--listen: " + parsed.error().message());
    }
    config.server.listen = flags.listen;
  }
  if (!flags.data_dir.empty()) {
    config.server.data_dir = flags.data_dir;
  }
  return config;
}

void PrintCounts(const egress::storage::StateCounts& counts) {
  for (DeliveryState s : egress::storage::kAllStates) {
    fmt::print("  {:<10} {}\n", egress::storage::StateName(s), egress::storage::CountOf(counts, s));
  }
}

int OpenAndReport(const std::string& data_dir, bool serve) {
  egress::SystemClock clock;
  auto store = egress::storage::OpenRocksQueueStore({.path = data_dir},
                                                    egress::ToUnixMillis(clock.WallNow()));
  if (!store) {
    std::fprintf(stderr, "relay-egress: %s\n", store.error().ToString().c_str());
    return kExitUnavailable;
  }
  auto counts = (*store)->Counts();
  if (!counts) {
    std::fprintf(stderr, "relay-egress: %s\n", counts.error().ToString().c_str());
    return kExitUnavailable;
  }
  fmt::print("store {} (in-flight work recovered):\n", data_dir);
  PrintCounts(*counts);
  if (serve) {
    fmt::print(
        "relay-egress: the durable store is ready; HTTP intake and dispatch are not built yet "
        "(see docs/architecture.md), so serve stops here.\n");
  }
  return (*store)->Close().ok() ? kExitOk : kExitUnavailable;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"relay-egress: durable, rate-limit-aware delivery to Slack, Discord, LINE and webhooks"};
  app.require_subcommand(1);
  ConfigFlags flags;
  bool check_config = false;
  auto* serve = app.add_subcommand("serve", "Run the worker service");
  auto* serve_config = serve->add_option("--config", flags.config_path, "TOML config file")
                            ->check(CLI::ExistingFile);
  serve->add_option("--profiles-dir", flags.profiles_dir,
                    "Platform profiles (default: profiles/ next to the config file)");
  serve->add_option("--listen", flags.listen, "host:port (overrides server.listen)");
  serve->add_option("--data-dir", flags.data_dir, "Store directory (overrides server.data_dir)");
  serve->add_flag("--check-config", check_config, "Validate the config and exit")
      ->needs(serve_config);
  auto* stats = app.add_subcommand("stats", "Print delivery counts by state");
  stats->add_option("--config", flags.config_path, "TOML config file")->check(CLI::ExistingFile);
  stats->add_option("--profiles-dir", flags.profiles_dir,
                    "Platform profiles (default: profiles/ next to the config file)");
  stats->add_option("--data-dir", flags.data_dir, "Store directory (overrides server.data_dir)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  auto config = ResolveConfig(flags);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message().c_str());
    return kExitUsage;
  }
  if (check_config) {
    fmt::print("{}: OK\n", flags.config_path);
    return kExitOk;
  }
  return OpenAndReport(config->server.data_dir, serve->parsed());
}
