#include "config/listen_address.h"

namespace egress::config {

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument("expected host:port, e.g. \"127.0.0.1:8686\"");
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return Status::InvalidArgument("expected [IPv6]:port, e.g. \"[::1]:8686\"");
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return Status::InvalidArgument("an IPv6 host needs brackets, e.g. \"[::1]:8686\"");
  }
  for (char c : host) {
    if (c == ' ' || c == '/' || c == '[' || c == ']' || static_cast<unsigned char>(c) < 0x20) {
      return Status::InvalidArgument("the host has a character hosts cannot have");
    }
  }
  if (port.empty() || port.size() > 5) {
    return Status::InvalidArgument("the port must be a number from 0 to 65535");
  }
  uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') {
      return Status::InvalidArgument("the port must be a number from 0 to 65535");
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) {
    return Status::InvalidArgument("the port must be a number from 0 to 65535");
  }
  return ListenAddress{std::string(host), static_cast<uint16_t>(value)};
}

}  // namespace egress::config
