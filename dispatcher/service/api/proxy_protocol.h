#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <boost/asio/ip/address.hpp>

#include "dispatcher/base/result.h"

namespace egress::service {

// The PROXY protocol header a load balancer sends before a connection's first byte (HAProxy's
// spec, versions 1 and 2: https://www.haproxy.org/download/2.8/doc/proxy-protocol.txt), read
// when server.proxy_protocol is on and the peer is a trusted proxy (docs/security.md, "Behind a
// proxy"): the client's address without an HTTP header to trust.
struct ProxyHeader {
  size_t size = 0;  // bytes the header takes, to drop before HTTP starts
  // The client's address; none for v1's UNKNOWN, v2's LOCAL command (the proxy's own health
  // check) or an address family other than IPv4 and IPv6: the peer stands then.
  std::optional<boost::asio::ip::address> source;
};

// The most bytes a header may take: v1's 107, v2's 16 and an address block with TLVs (HAProxy
// sends a few hundred at most).
inline constexpr size_t kMaxProxyHeaderBytes = 16 + 1024;

// Reads the header at the start of `bytes`: nullopt while more bytes are needed (a prefix of a
// valid header, under kMaxProxyHeaderBytes); InvalidArgument naming what is wrong for anything
// else (no signature, a bad version, command, family, length, address or port). Pure.
Result<std::optional<ProxyHeader>> ParseProxyHeader(std::string_view bytes);

}  // namespace egress::service
