#include "config/server_options.h"

#include <cstring>

#include <arpa/inet.h>

namespace egress::config {
namespace {

// An IPv4 literal in 127.0.0.0/8, the IPv6 literal ::1, or the name "localhost".
bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") {
    return true;
  }
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 &&
         std::memcmp(&v6, &in6addr_loopback, sizeof(v6)) == 0;
}

}  // namespace

Status CheckAuthListen(const ServerOptions& server) {
  if (server.auth == AuthMode::kOff && !IsLoopbackHost(server.listen.host)) {
    return Status::InvalidArgument(
        "server.auth = \"off\" needs a loopback listen address (127.0.0.1, [::1] or localhost): "
        "anyone who reaches " +
        server.listen.ToString() + " could act as any tenant");
  }
  return Status::Ok();
}

}  // namespace egress::config
