#pragma once

#include <string>

#include "dispatcher/base/result.h"

namespace egress::cli {

// Where the service's HTTP API is: from --server "http://host:port" or the config's listen.
struct ServerUrl {
  std::string host;
  std::string port;
};

// Accepts "http://host:port", "host:port" and "http://[v6]:port" (a trailing "/" is ignored).
// InvalidArgument naming the problem otherwise.
Result<ServerUrl> ParseServerUrl(const std::string& text);

struct HttpReply {
  int status = 0;
  std::string body;
};

// One blocking HTTP/1.1 request with a JSON body (empty: none) and, when non-empty, the
// X-Admin-Token header. Errors: Unavailable when nothing accepts the connection (refused, no
// such host): the caller may fall back to the store; IoError for failures after connecting
// (including a 10 s read timeout).
Result<HttpReply> HttpCall(const ServerUrl& server, const std::string& method,
                           const std::string& target, const std::string& body,
                           const std::string& admin_token);

}  // namespace egress::cli
