#include "adapters/ip_address.h"

#include <cstring>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

namespace egress::adapters {
namespace {

// Removes "[...]" around an IPv6 literal and a trailing "%zone".
std::string StripDecorations(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  size_t zone = text.find('%');
  if (zone != std::string_view::npos && text.find(':') != std::string_view::npos) {
    text = text.substr(0, zone);
  }
  return std::string(text);
}

}  // namespace

Result<IpAddress> IpAddress::Parse(std::string_view text) {
  std::string literal = StripDecorations(text);
  in_addr v4{};
  if (inet_pton(AF_INET, literal.c_str(), &v4) == 1) {
    return V4(ntohl(v4.s_addr));
  }
  std::array<uint8_t, 16> v6{};
  if (inet_pton(AF_INET6, literal.c_str(), v6.data()) == 1) {
    return V6(v6);
  }
  return Status::InvalidArgument(
      fmt::format("'{}' is not an IP address literal", text.substr(0, 64)));
}

Result<IpAddress> IpAddress::FromSockaddr(const sockaddr* addr, socklen_t len) {
  if (addr != nullptr && addr->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    sockaddr_in in{};
    std::memcpy(&in, addr, sizeof(in));
    return V4(ntohl(in.sin_addr.s_addr));
  }
  if (addr != nullptr && addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, addr, sizeof(in6));
    std::array<uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), &in6.sin6_addr, bytes.size());
    return V6(bytes);
  }
  return Status::InvalidArgument("not an AF_INET or AF_INET6 socket address");
}

IpAddress IpAddress::V4(uint32_t host_order) {
  IpAddress a;
  a.is_v4_ = true;
  for (int i = 0; i < 4; ++i) {
    a.bytes_[i] = static_cast<uint8_t>(host_order >> (24 - 8 * i));
  }
  return a;
}

IpAddress IpAddress::V6(const std::array<uint8_t, 16>& bytes) {
  IpAddress a;
  a.is_v4_ = false;
  a.bytes_ = bytes;
  return a;
}

uint32_t IpAddress::v4() const {
  return (uint32_t{bytes_[0]} << 24) | (uint32_t{bytes_[1]} << 16) | (uint32_t{bytes_[2]} << 8) |
         uint32_t{bytes_[3]};
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(is_v4_ ? AF_INET : AF_INET6, bytes_.data(), buf, sizeof(buf));
  return buf;
}

}  // namespace egress::adapters
