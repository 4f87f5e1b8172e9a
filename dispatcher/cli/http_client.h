#pragma once

#include <string>
#include <string_view>

#include "dispatcher/base/host_port.h"
#include "dispatcher/base/result.h"

namespace egress::cli {

// The service's address from --server: "http://host:port" or "host:port" (ParseHostPort: a name,
// an IPv4 literal or "[v6]"), a trailing "/" ignored. InvalidArgument starting "--server: " and
// naming the problem otherwise (https is refused: the API speaks plain HTTP on loopback).
Result<HostPort> ParseServerUrl(std::string_view text);

struct HttpReply {
  int status = 0;
  std::string body;
};

// One blocking HTTP/1.1 request with a JSON body (empty: none) and, when non-empty, `token` (a
// tenant's API key or the admin token) as "Authorization: Bearer <token>"; InvalidArgument,
// before connecting, for a token that is not visible ASCII. A name is resolved and each of its
// addresses tried in turn. Errors: Unavailable when nothing accepts the connection (refused, no
// such host): the caller may fall back to the store; IoError for failures after connecting
// (including a 10 s read timeout).
Result<HttpReply> HttpCall(const HostPort& server, const std::string& method,
                           const std::string& target, const std::string& body,
                           const std::string& token);

}  // namespace egress::cli
