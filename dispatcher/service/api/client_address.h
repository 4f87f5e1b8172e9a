#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/fields.hpp>

#include "adapters/ip_network.h"
#include "dispatcher/base/result.h"

namespace egress::service {

// The proxies whose word on a request's client counts (server.trusted_proxies; docs/security.md,
// "Behind a proxy"). A value type; pure functions.
class TrustedProxies {
 public:
  TrustedProxies() = default;
  // CIDRs ("10.0.0.0/8", "::1/128"); InvalidArgument naming the entry that does not parse.
  static Result<TrustedProxies> Parse(const std::vector<std::string>& cidrs);

  bool empty() const { return networks_.empty(); }
  bool Trusts(const boost::asio::ip::address& address) const;

  // The client of a request that came from `peer` with `fields`: `peer` itself unless it is a
  // trusted proxy, in which case the hops the proxies recorded (Forwarded's for= when the
  // request has a Forwarded header, else X-Forwarded-For; every header line of it, in order) are
  // read from the right: the first hop that is not a trusted proxy is the client. A hop that is
  // not an address (RFC 7239's "unknown" or an obfuscated name, or garbage) ends the walk at the
  // trusted hop right of it, and a walk through only trusted hops ends at the leftmost; at most
  // kMaxHops are read. A request from an untrusted peer is never judged by its headers (anyone
  // can write them).
  static constexpr size_t kMaxHops = 32;
  boost::asio::ip::address ClientOf(const boost::asio::ip::address& peer,
                                    const boost::beast::http::fields& fields) const;

 private:
  std::vector<adapters::IpNetwork> networks_;
};

// The key per-address limits count `address` under: an IPv4 address (also when IPv4-mapped)
// as it is, an IPv6 one by its /64, since one host usually holds a whole /64. Bytes, not text.
std::string AddressKey(const boost::asio::ip::address& address);

}  // namespace egress::service
