// The relay-egress binary. Today: `serve` opens the durable store (recovering in-flight work)
// and reports what it holds; `stats` prints counts by state. The HTTP intake, the dispatcher
// loop and the operator CLI are built in later steps (see docs/architecture.md).

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <toml++/toml.h>

#include <cstdio>
#include <string>

#include "dispatcher/clock.h"
#include "storage/rocks_queue_store.h"

namespace {

using egress::storage::DeliveryState;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;

// Reads server.data_dir from the config file; the flag wins when given.
bool ResolveDataDir(const std::string& config_path, std::string& data_dir) {
  if (!data_dir.empty() || config_path.empty()) {
    return true;
  }
  // Debian's toml++ is built with exceptions: convert at this edge.
  try {
    toml::table parsed = toml::parse_file(config_path);
    data_dir = parsed["server"]["data_dir"].value_or(std::string("./var/data"));
    return true;
  } catch (const toml::parse_error& err) {
    std::fprintf(stderr, "%s:%u: %s\n", config_path.c_str(), err.source().begin.line,
                 std::string(err.description()).c_str());
    return false;
  }
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
  std::string config_path;
  std::string data_dir;
  auto* serve = app.add_subcommand("serve", "Run the worker service");
  serve->add_option("--config", config_path, "TOML config file")->check(CLI::ExistingFile);
  serve->add_option("--data-dir", data_dir, "Store directory (overrides server.data_dir)");
  auto* stats = app.add_subcommand("stats", "Print delivery counts by state");
  stats->add_option("--config", config_path, "TOML config file")->check(CLI::ExistingFile);
  stats->add_option("--data-dir", data_dir, "Store directory (overrides server.data_dir)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!ResolveDataDir(config_path, data_dir)) {
    return kExitUsage;
  }
  return OpenAndReport(data_dir, serve->parsed());
}
