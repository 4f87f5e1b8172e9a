#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace egress::sim {

// How a request reached the simulator: plain HTTP/1.x, HTTP/1.x over TLS, or HTTP/2 over TLS
// (negotiated by ALPN). Counted per platform request in the stats ("protocols").
enum class SimProtocol { kHttp1, kHttp1Tls, kHttp2Tls };

// "http/1.1", "https/1.1", "h2": the keys of the stats' "protocols" object.
std::string_view ProtocolName(SimProtocol protocol);

// One HTTP request as the platform simulations see it: no Beast types, so the platform logic
// is testable without sockets.
struct SimRequest {
  std::string method;                                        // "POST"
  std::string path;                                          // "/api/chat.postMessage" (no query)
  std::string query;                                         // "wait=true" (no '?')
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case
  std::string body;
  SimProtocol protocol = SimProtocol::kHttp1;  // set by the connection, not the parser

  // The first header named `name` (lower-case), or empty.
  std::string_view Header(std::string_view name) const;
  // True when the query has `key=value`.
  bool QueryHas(std::string_view key, std::string_view value) const;
};

// The answer. `reset_connection` closes the socket without a response (RST); `delay_ms` holds
// the response back that long.
struct SimResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string_view content_type = "application/json";  // a literal: never owned
  int delay_ms = 0;
  bool reset_connection = false;

  void SetHeader(std::string name, std::string value);
};

SimResponse JsonResponse(int status, std::string body);

}  // namespace egress::sim
