#include "dispatcher/base/host_port.h"

#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>

namespace egress {
namespace {

constexpr size_t kMaxLabelLength = 63;
constexpr char kExpected[] = "expected host:port, e.g. \"127.0.0.1:8686\"";
constexpr char kBadPort[] = "the port must be a number from 0 to 65535";

bool IsIpv4Literal(const std::string& host) {
  in_addr address{};
  return inet_pton(AF_INET, host.c_str(), &address) == 1;
}

bool IsIpv6Literal(const std::string& host) {
  in6_addr address{};
  return inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// A name or an IPv4 literal (the part before the colon, no brackets).
Status CheckHost(std::string_view host) {
  if (host.empty()) {
    return Status::InvalidArgument("the host is missing, e.g. \"127.0.0.1:8686\"");
  }
  if (host.size() > kMaxHostLength) {
    return Status::InvalidArgument("the host is longer than 253 characters");
  }
  bool only_digits_and_dots = true;
  for (char c : host) {
    if (!IsNameChar(c)) {
      return Status::InvalidArgument(
          "the host has a character hosts cannot have (names are letters, digits, '-', '_' "
          "and '.')");
    }
    if (c != '.' && (c < '0' || c > '9')) {
      only_digits_and_dots = false;
    }
  }
  if (only_digits_and_dots) {
    if (!IsIpv4Literal(std::string(host))) {
      return Status::InvalidArgument("the host is not an IPv4 address, e.g. \"127.0.0.1\"");
    }
    return Status::Ok();
  }
  size_t start = 0;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    if (dot == std::string_view::npos) {
      dot = host.size();
    }
    const std::string_view label = host.substr(start, dot - start);
    if (label.empty() || label.size() > kMaxLabelLength) {
      return Status::InvalidArgument("each dot-separated part of the host must be 1 to 63 long");
    }
    if (label.front() == '-' || label.back() == '-') {
      return Status::InvalidArgument("a part of the host starts or ends with '-'");
    }
    start = dot + 1;
  }
  return Status::Ok();
}

Result<uint16_t> ParsePort(std::string_view port) {
  if (port.empty() || port.size() > 5) {
    return Status::InvalidArgument(kBadPort);
  }
  uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') {
      return Status::InvalidArgument(kBadPort);
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port.size() > 1 && port.front() == '0') {
    return Status::InvalidArgument("the port has a leading zero");
  }
  if (value > 65535) {
    return Status::InvalidArgument(kBadPort);
  }
  return static_cast<uint16_t>(value);
}

}  // namespace

bool HostPort::IsIpv6() const { return host.find(':') != std::string::npos; }

std::string HostPort::ToString() const {
  const std::string port_text = std::to_string(port);
  return IsIpv6() ? "[" + host + "]:" + port_text : host + ":" + port_text;
}

Result<HostPort> ParseHostPort(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("the address has a NUL character");
  }
  HostPort out;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("an IPv6 host needs its closing ']', e.g. \"[::1]:8686\"");
    }
    out.host = std::string(text.substr(1, close - 1));
    if (out.host.empty() || out.host.size() > kMaxHostLength || !IsIpv6Literal(out.host)) {
      return Status::InvalidArgument("the brackets hold no IPv6 address, e.g. \"[::1]:8686\"");
    }
    if (close + 1 == text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument("expected ':' and a port after ']', e.g. \"[::1]:8686\"");
    }
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument(kExpected);
    }
    if (text.find(':', colon + 1) != std::string_view::npos) {
      return Status::InvalidArgument("an IPv6 host needs brackets, e.g. \"[::1]:8686\"");
    }
    const std::string_view host = text.substr(0, colon);
    if (Status status = CheckHost(host); !status.ok()) {
      return status;
    }
    out.host = std::string(host);
    port = text.substr(colon + 1);
  }
  Result<uint16_t> number = ParsePort(port);
  if (!number) {
    return number.error();
  }
  out.port = *number;
  return out;
}

}  // namespace egress
