#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress::config {

// Where the HTTP API listens.
struct ListenAddress {
  std::string host;   // a name or an IP literal, IPv6 without its brackets
  uint16_t port = 0;  // 0 picks a free port (tests)
};

// Parses "host:port", "[v6]:port". InvalidArgument naming the problem.
Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace egress::config
