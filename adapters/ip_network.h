#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/ip_address.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

// An address range in CIDR form ("10.20.0.0/16", "fd00:1::/32"). An IPv4-mapped IPv6 address
// (::ffff:a.b.c.d) is matched as the IPv4 address it carries. A value type; pure functions.
class IpNetwork {
 public:
  // "<address>/<prefix>" with prefix 0..32 (IPv4) or 0..128 (IPv6); bits set past the prefix are
  // InvalidArgument ("10.20.1.0/16" is a typo more often than a wish), as is any other form.
  static Result<IpNetwork> Parse(std::string_view text);

  bool Contains(const IpAddress& address) const;
  std::string ToString() const;

 private:
  IpAddress base_;
  int prefix_ = 0;
};

// `address` as IPv4 when it is an IPv4-mapped IPv6 address, else unchanged.
IpAddress UnmapV4(const IpAddress& address);

}  // namespace egress::adapters
