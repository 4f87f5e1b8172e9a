#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <sys/socket.h>

#include "dispatcher/base/result.h"

namespace egress::adapters {

// An IPv4 or IPv6 address, parsed from a literal or a resolver's sockaddr. Never resolves a
// name. A value type; pure functions, safe from any thread.
class IpAddress {
 public:
  // Dotted-quad IPv4 ("10.0.0.1") or IPv6 ("::1", "[::1]", "fe80::1%eth0": brackets and an IPv6
  // zone are stripped). Forms inet_pton refuses (names, "127.1", "0x7f.0.0.1", "010.0.0.1") are
  // InvalidArgument, so a caller that refuses on error fails closed.
  static Result<IpAddress> Parse(std::string_view text);

  // AF_INET or AF_INET6; InvalidArgument for other families or a short `len`.
  static Result<IpAddress> FromSockaddr(const sockaddr* addr, socklen_t len);

  static IpAddress V4(uint32_t host_order);
  static IpAddress V6(const std::array<uint8_t, 16>& bytes);

  bool is_v4() const { return is_v4_; }
  // The IPv4 address in host byte order; only meaningful when is_v4().
  uint32_t v4() const;
  // The 16 IPv6 bytes in network order; only meaningful when !is_v4().
  const std::array<uint8_t, 16>& v6() const { return bytes_; }

  // Canonical text ("10.0.0.1", "::ffff:10.0.0.1").
  std::string ToString() const;

 private:
  bool is_v4_ = true;
  std::array<uint8_t, 16> bytes_{};  // IPv4 uses the first four bytes.
};

}  // namespace egress::adapters
