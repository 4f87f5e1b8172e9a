#pragma once

#include <string>
#include <string_view>

#include "dispatcher/base/host_port.h"
#include "dispatcher/base/result.h"

namespace egress::cli {

// Where the service answers: plain HTTP (the service itself) or HTTPS (a TLS proxy in front of
// it).
struct ServerUrl {
  bool https = false;
  HostPort address;

  // "http://127.0.0.1:8686", "https://relay.example.com:443".
  std::string ToString() const;
  friend bool operator==(const ServerUrl&, const ServerUrl&) = default;
};

// The service's address from --server: "http://host:port", "https://host[:port]" (port 443 when
// absent) or "host:port" (http); the host a name, an IPv4 literal or "[v6]"; a trailing "/"
// ignored. InvalidArgument starting "--server: " and naming the problem otherwise.
Result<ServerUrl> ParseServerUrl(std::string_view text);

struct HttpReply {
  int status = 0;
  std::string body;
};

// One blocking request through libcurl with a JSON body (empty: none) and, when non-empty,
// `token` (a tenant's API key or the admin token) as "Authorization: Bearer <token>";
// InvalidArgument, before connecting, for a token that is not visible ASCII. HTTPS verifies the
// server's certificate and name against `cacert` (a PEM file; empty: the system's CAs). No
// redirect is followed. Errors: Unavailable when nothing accepts the connection (refused, no such
// host): the caller may fall back to the store; IoError for anything after that (TLS failures
// included, and a transfer that stalls for 10 s). The answer is cut off at 256 MiB (IoError).
Result<HttpReply> HttpCall(const ServerUrl& server, const std::string& method,
                           const std::string& target, const std::string& body,
                           const std::string& token, const std::string& cacert = "");

}  // namespace egress::cli
