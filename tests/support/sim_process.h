#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dispatcher/base/status.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"

namespace egress {

// How a test reaches the platform simulator: plain HTTP/1.1, HTTPS with ALPN limited to
// http/1.1 (so curl, which asks for h2 over TLS, gets HTTP/1.1), or HTTPS offering h2.
enum class SimWire { kHttp, kHttps1, kHttps2 };

// For test names: "Http", "Https1", "Https2".
std::string SimWireName(SimWire wire);
// gtest prints a parameter with this (the ctest names then read ".../Https2  # GetParam() =
// Https2").
inline void PrintTo(SimWire wire, std::ostream* os) { *os << SimWireName(wire); }
// The key the simulator counts the wire's requests under in its stats' "protocols" object:
// "http/1.1", "https/1.1", "h2".
std::string SimProtocolKey(SimWire wire);

// relay-egress-sim started for a test on 127.0.0.1 (any free port) over `wire`; with TLS, the
// run's CA certificate is written to ca_file() in a temporary directory the object owns. Stops
// the process (SIGTERM) on destruction.
class SimProcess {
 public:
  SimProcess() = default;
  SimProcess(const SimProcess&) = delete;
  SimProcess& operator=(const SimProcess&) = delete;

  // Starts it with `extra_args` after the wire's own flags. Unavailable when it did not start.
  Status Start(SimWire wire, const std::vector<std::string>& extra_args = {});

  SimWire wire() const { return wire_; }
  int port() const { return port_; }
  // "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT".
  std::string BaseUrl() const;
  // The CA certificate (PEM file) that signed the simulator's certificate; empty over kHttp.
  const std::string& ca_file() const { return ca_file_; }

  // One request to the simulator itself, over its wire, through the project's curl transport
  // trusting ca_file(). status 0 with the error in `body` when it failed.
  TestResponse Call(const std::string& method, const std::string& target,
                    const std::string& body = "");
  // POST /_sim/config with `patch`; the answer's JSON (the merged config, or {"error":...}).
  nlohmann::json Configure(const nlohmann::json& patch);
  // GET /_sim/stats.
  nlohmann::json Stats();

 private:
  TempDir dir_;
  ChildProcess child_;
  SimWire wire_ = SimWire::kHttp;
  int port_ = 0;
  std::string ca_file_;
};

}  // namespace egress
