// relay-egress-sim: fake Slack, Discord, LINE, Telegram, Teams, the made-up acme API and webhook
// receivers on loopback for tests and benchmarks. Usage and the config format: docs/simulator.md.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/base/clock.h"
#include "tests/simulator/config_file.h"
#include "tests/simulator/http_server.h"
#include "tests/simulator/simulator.h"
#include "tests/support/test_certificates.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;

void Usage() {
  std::fprintf(
      stderr,
      "usage: relay-egress-sim [--config FILE.json|FILE.toml] [--listen 127.0.0.1|::1]\n"
      "                        [--port N] [--threads N]\n"
      "                        [--tls] [--tls-ca-out FILE] [--tls-names NAME,...]\n"
      "                        [--alpn h2,http/1.1] [--h2-max-streams N]\n"
      "Prints \"listening ADDRESS:PORT\" on stdout once bound.\n"
      "--tls serves HTTPS with a certificate from a CA made for this run (P-256, valid one day)\n"
      "for the --tls-names (default localhost,127.0.0.1,::1); --tls-ca-out writes that CA's\n"
      "certificate (PEM) to FILE before listening. ALPN offers --alpn in that order (default\n"
      "h2,http/1.1): h2 is HTTP/2, http/1.1 or no ALPN is HTTP/1.1.\n");
}

std::vector<std::string> SplitComma(std::string_view text) {
  std::vector<std::string> out;
  while (true) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) {
      return out;
    }
    text.remove_prefix(comma + 1);
  }
}

// A decimal number in [lo, hi], or -1.
long ParseNumber(const std::string& text, long lo, long hi) {
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < lo || n > hi) {
    return -1;
  }
  return n;
}

struct TlsFlags {
  bool enabled = false;
  std::string ca_out;
  std::vector<std::string> names = {"localhost", "127.0.0.1", "::1"};
  std::vector<std::string> alpn = {"h2", "http/1.1"};
};

// Makes the run's CA and leaf, writes the CA where asked. Returns an exit code, 0 when done.
int SetUpTls(const TlsFlags& flags, egress::sim::ServerOptions& options) {
  egress::Result<egress::TestPki> pki = egress::MakeTestPki({.names = flags.names});
  if (!pki.has_value()) {
    std::fprintf(stderr, "tls: %s\n", pki.error().ToString().c_str());
    return pki.error().code() == egress::Status::Code::kInvalidArgument ? kExitUsage
                                                                        : kExitUnavailable;
  }
  if (!flags.ca_out.empty()) {
    std::ofstream out(flags.ca_out, std::ios::binary | std::ios::trunc);
    out << pki->ca_cert_pem;
    out.close();
    if (!out) {
      std::fprintf(stderr, "tls: cannot write the CA certificate to '%s'\n", flags.ca_out.c_str());
      return kExitUnavailable;
    }
  }
  options.tls = egress::sim::TlsServerOptions{
      .cert_pem = pki->leaf_cert_pem, .key_pem = pki->leaf_key_pem, .alpn = flags.alpn};
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  egress::sim::ServerOptions options;
  TlsFlags tls;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      Usage();
      return 0;
    }
    if (arg == "--tls") {
      tls.enabled = true;
      continue;
    }
    if (i + 1 >= argc) {
      Usage();
      return kExitUsage;
    }
    std::string value = argv[++i];
    long number = 0;
    if (arg == "--config") {
      config_path = value;
    } else if (arg == "--listen") {
      options.address = value;
    } else if (arg == "--port" && (number = ParseNumber(value, 0, 65535)) >= 0) {
      options.port = static_cast<uint16_t>(number);
    } else if (arg == "--threads" && (number = ParseNumber(value, 1, 64)) >= 0) {
      options.threads = static_cast<int>(number);
    } else if (arg == "--tls-ca-out") {
      tls.ca_out = value;
    } else if (arg == "--tls-names") {
      tls.names = SplitComma(value);
    } else if (arg == "--alpn") {
      tls.alpn = SplitComma(value);
    } else if (arg == "--h2-max-streams" && (number = ParseNumber(value, 1, 1 << 20)) >= 0) {
      options.h2_max_concurrent_streams = static_cast<uint32_t>(number);
    } else {
      Usage();
      return kExitUsage;
    }
  }
  if (!tls.enabled && !tls.ca_out.empty()) {
    std::fprintf(stderr, "--tls-ca-out needs --tls\n");
    return kExitUsage;
  }
  if (tls.enabled) {
    if (int rc = SetUpTls(tls, options); rc != 0) {
      return rc;
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
  options.on_loop_late = [&sim](std::chrono::nanoseconds late) { sim.NoteLoopLate(late); };
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
