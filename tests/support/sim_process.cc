#include "tests/support/sim_process.h"

#include <optional>
#include <utility>

#include <boost/asio/io_context.hpp>

#include "adapters/curl_transport.h"
#include "dispatcher/base/clock.h"

namespace egress {

std::string SimWireName(SimWire wire) {
  switch (wire) {
    case SimWire::kHttp:
      return "Http";
    case SimWire::kHttps1:
      return "Https1";
    case SimWire::kHttps2:
      return "Https2";
  }
  return "Unknown";
}

std::string SimProtocolKey(SimWire wire) {
  switch (wire) {
    case SimWire::kHttp:
      return "http/1.1";
    case SimWire::kHttps1:
      return "https/1.1";
    case SimWire::kHttps2:
      return "h2";
  }
  return "unknown";
}

Status SimProcess::Start(SimWire wire, const std::vector<std::string>& extra_args) {
  wire_ = wire;
  std::vector<std::string> args = {"--port", "0"};
  if (wire != SimWire::kHttp) {
    ca_file_ = dir_.Sub("sim-ca.pem");
    args.insert(args.end(), {"--tls", "--tls-ca-out", ca_file_});
    if (wire == SimWire::kHttps1) {
      args.insert(args.end(), {"--alpn", "http/1.1"});
    }
  }
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  port_ = child_.Start(BuildDir() + "/relay-egress-sim", args);
  if (port_ == 0) {
    return Status::Unavailable("relay-egress-sim did not start: " + child_.error());
  }
  return Status::Ok();
}

std::string SimProcess::BaseUrl() const {
  return std::string(wire_ == SimWire::kHttp ? "http" : "https") +
         "://127.0.0.1:" + std::to_string(port_);
}

TestResponse SimProcess::Call(const std::string& method, const std::string& target,
                              const std::string& body) {
  boost::asio::io_context io;
  SystemClock clock;
  // Stats documents can be large; the transport keeps 64 KiB of a body by default.
  auto transport = adapters::NewCurlTransport(
      io, clock, {.max_response_body = 16 * 1024 * 1024, .ca_file = ca_file_});
  std::optional<Result<adapters::HttpResponse>> answer;
  transport->Send({.method = method, .url = BaseUrl() + target, .body = body},
                  [&](Result<adapters::HttpResponse> r) { answer = std::move(r); });
  while (!answer.has_value() && io.run_one() > 0) {
  }
  TestResponse out;
  if (!answer.has_value()) {
    out.body = "no answer";
    return out;
  }
  if (!answer->has_value()) {
    out.body = answer->error().ToString();
    return out;
  }
  out.status = (*answer)->status;
  for (const adapters::HttpHeader& h : (*answer)->headers) {
    out.headers.emplace_back(h.name, h.value);
  }
  out.body = std::move((*answer)->body);
  return out;
}

nlohmann::json SimProcess::Configure(const nlohmann::json& patch) {
  return Call("POST", "/_sim/config", patch.dump()).Json();
}

nlohmann::json SimProcess::Stats() { return Call("GET", "/_sim/stats").Json(); }

}  // namespace egress
