// relay-egress-sim: fake Slack, Discord, LINE and webhook receivers on loopback for tests and
// benchmarks. Usage and the config format: docs/simulator.md.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dispatcher/base/clock.h"
#include "tests/simulator/config_file.h"
#include "tests/simulator/http_server.h"
#include "tests/simulator/simulator.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;

void Usage() {
  std::fprintf(stderr,
               "usage: relay-egress-sim [--config FILE.json|FILE.toml] [--listen 127.0.0.1|::1]\n"
               "                        [--port N] [--threads N]\n"
               "Prints \"listening ADDRESS:PORT\" on stdout once bound.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  egress::sim::ServerOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      Usage();
      return 0;
    }
    if (i + 1 >= argc) {
      Usage();
      return kExitUsage;
    }
    std::string value = argv[++i];
    if (arg == "--config") {
      config_path = value;
    } else if (arg == "--listen") {
      options.address = value;
    } else if (arg == "--port") {
      options.port = static_cast<uint16_t>(std::atoi(value.c_str()));
    } else if (arg == "--threads") {
      options.threads = std::atoi(value.c_str());
    } else {
      Usage();
      return kExitUsage;
    }
  }
  std::string config_json = "{}";
  if (!config_path.empty()) {
    egress::Result<std::string> loaded = egress::sim::LoadConfigFile(config_path);
    if (!loaded.has_value()) {
      std::fprintf(stderr, "%s\n", loaded.error().ToString().c_str());
      return kExitUsage;
    }
    config_json = std::move(*loaded);
  }
  egress::SystemClock clock;
  auto simulator = egress::sim::Simulator::Create(clock, config_json);
  if (!simulator.has_value()) {
    std::fprintf(stderr, "config: %s\n", simulator.error().ToString().c_str());
    return kExitUsage;
  }
  egress::sim::Simulator& sim = **simulator;
  egress::Status status = egress::sim::RunServer(
      options, [&sim](const egress::sim::SimRequest& req) { return sim.Handle(req); },
      [](const std::string& bound) {
        std::printf("listening %s\n", bound.c_str());
        std::fflush(stdout);
      });
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return status.code() == egress::Status::Code::kInvalidArgument ? kExitUsage : kExitUnavailable;
  }
  return 0;
}
