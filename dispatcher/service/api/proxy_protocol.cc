#include "dispatcher/service/api/proxy_protocol.h"

#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>

namespace egress::service {
namespace {

namespace ip = boost::asio::ip;

constexpr std::string_view kV1 = "PROXY ";
constexpr size_t kV1MaxBytes = 107;  // the spec's worst case, CRLF included
constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};
constexpr size_t kV2FixedBytes = 16;

Status Bad(std::string why) { return Status::InvalidArgument("PROXY header: " + std::move(why)); }

// A decimal port, 0 to 65535, digits only.
bool ValidPort(std::string_view text) {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) {
    return false;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value <= 65535;
}

// Splits `line` at single spaces.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= line.size()) {
    const size_t space = line.find(' ', start);
    const size_t end = space == std::string_view::npos ? line.size() : space;
    out.push_back(line.substr(start, end - start));
    if (space == std::string_view::npos) {
      break;
    }
    start = space + 1;
  }
  return out;
}

Result<std::optional<ProxyHeader>> ParseV1(std::string_view bytes) {
  const size_t end = bytes.find("\r\n");
  if (end == std::string_view::npos) {
    if (bytes.size() >= kV1MaxBytes) {
      return Bad("version 1 line longer than 107 bytes");
    }
    return std::optional<ProxyHeader>();
  }
  if (end + 2 > kV1MaxBytes) {
    return Bad("version 1 line longer than 107 bytes");
  }
  ProxyHeader header{.size = end + 2};
  const std::vector<std::string_view> f = Fields(bytes.substr(kV1.size(), end - kV1.size()));
  if (f.empty()) {
    return Bad("no protocol");
  }
  if (f[0] == "UNKNOWN") {
    return std::optional<ProxyHeader>(header);  // the rest is ignored, as the spec says
  }
  if ((f[0] != "TCP4" && f[0] != "TCP6") || f.size() != 5) {
    return Bad("version 1 needs TCP4 or TCP6 and four fields");
  }
  boost::system::error_code ec;
  const ip::address source = ip::make_address(std::string(f[1]), ec);
  if (ec) {
    return Bad("source is not an address");
  }
  const ip::address dest = ip::make_address(std::string(f[2]), ec);
  if (ec || source.is_v4() != (f[0] == "TCP4") || dest.is_v4() != source.is_v4()) {
    return Bad("addresses do not match " + std::string(f[0]));
  }
  if (!ValidPort(f[3]) || !ValidPort(f[4])) {
    return Bad("ports must be 0 to 65535");
  }
  header.source = source;
  return std::optional<ProxyHeader>(header);
}

Result<std::optional<ProxyHeader>> ParseV2(std::string_view bytes) {
  if (bytes.size() < kV2FixedBytes) {
    return std::optional<ProxyHeader>();
  }
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  if ((byte(12) >> 4) != 2) {
    return Bad("version 2 signature with another version");
  }
  const uint8_t command = byte(12) & 0x0F;
  if (command > 1) {
    return Bad("unknown version 2 command");
  }
  const size_t length = (static_cast<size_t>(byte(14)) << 8) | byte(15);
  if (kV2FixedBytes + length > kMaxProxyHeaderBytes) {
    return Bad("version 2 header longer than the most taken");
  }
  if (bytes.size() < kV2FixedBytes + length) {
    return std::optional<ProxyHeader>();
  }
  ProxyHeader header{.size = kV2FixedBytes + length};
  if (command == 0) {
    return std::optional<ProxyHeader>(header);  // LOCAL: the proxy's own connection
  }
  const uint8_t family = byte(13) >> 4;
  const std::string_view block = bytes.substr(kV2FixedBytes, length);
  if (family == 1) {  // AF_INET: source, destination, their ports
    if (block.size() < 12) {
      return Bad("version 2 IPv4 block too short");
    }
    ip::address_v4::bytes_type raw;
    std::memcpy(raw.data(), block.data(), raw.size());
    header.source = ip::address_v4(raw);
  } else if (family == 2) {  // AF_INET6
    if (block.size() < 36) {
      return Bad("version 2 IPv6 block too short");
    }
    ip::address_v6::bytes_type raw;
    std::memcpy(raw.data(), block.data(), raw.size());
    header.source = ip::address_v6(raw);
  } else if (family > 3) {
    return Bad("unknown version 2 address family");
  }
  return std::optional<ProxyHeader>(header);
}

}  // namespace

Result<std::optional<ProxyHeader>> ParseProxyHeader(std::string_view bytes) {
  // A prefix of either signature: more is needed to tell.
  const size_t v1 = std::min(bytes.size(), kV1.size());
  const size_t v2 = std::min(bytes.size(), kV2Signature.size());
  if (bytes.substr(0, v1) == kV1.substr(0, v1) && bytes.size() < kV1.size()) {
    return std::optional<ProxyHeader>();
  }
  if (bytes.substr(0, v2) == kV2Signature.substr(0, v2) && bytes.size() < kV2Signature.size()) {
    return std::optional<ProxyHeader>();
  }
  if (bytes.starts_with(kV1)) {
    return ParseV1(bytes);
  }
  if (bytes.starts_with(kV2Signature)) {
    return ParseV2(bytes);
  }
  return Bad("the connection does not start with one (server.proxy_protocol is on)");
}

}  // namespace egress::service
