#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress {

// A TCP address as people write it: the HTTP API's listen address (server.listen, --listen) and
// the service the CLI talks to (--server). The one parser of "host:port" in the project, so that
// what one place accepts every other place accepts too. Plain data.
struct HostPort {
  // A name ("localhost"), an IPv4 literal, or an IPv6 literal without its brackets. Names are
  // resolved by whoever connects or binds, not here.
  std::string host;
  // 0 asks a listener for a free port (tests); nothing can connect to it.
  uint16_t port = 0;

  // True when `host` is an IPv6 literal (it then needs brackets in text).
  bool IsIpv6() const;
  // "host:port", or "[v6]:port": what ParseHostPort reads back to the same value.
  std::string ToString() const;

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// Longest host accepted: a DNS name's limit, longer than any IP literal.
inline constexpr size_t kMaxHostLength = 253;

// Parses "host:port" or "[v6]:port". The host is a name (dot-separated labels of letters,
// digits, '-' and '_', each 1 to 63 long, not starting or ending with '-'), an IPv4 literal
// ("127.0.0.1"; a host of only digits and dots must be one), or an IPv6 literal in brackets
// ("[::1]", no zone id). The host is never empty: to listen everywhere write "0.0.0.0" or "[::]".
// The port is 0 to 65535 in decimal digits only: no sign, no leading zero, nothing after it.
// InvalidArgument naming the problem otherwise; the message never repeats the input (it may be
// hostile), so callers prefix it with where the text came from ("server.listen: ...").
Result<HostPort> ParseHostPort(std::string_view text);

}  // namespace egress
