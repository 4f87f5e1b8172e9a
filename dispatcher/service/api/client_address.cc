#include "dispatcher/service/api/client_address.h"

#include <optional>

#include <fmt/format.h>

#include "adapters/http_header.h"

namespace egress::service {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::address;

adapters::IpAddress ToIp(const address& a) {
  if (a.is_v4()) {
    return adapters::IpAddress::V4(a.to_v4().to_uint());
  }
  const auto bytes = a.to_v6().to_bytes();
  std::array<uint8_t, 16> copy{};
  std::copy(bytes.begin(), bytes.end(), copy.begin());
  return adapters::UnmapV4(adapters::IpAddress::V6(copy));
}

// The address of one hop: "192.0.2.1", "192.0.2.1:4711", "[2001:db8::1]", "[2001:db8::1]:4711",
// "2001:db8::1", each maybe in double quotes (Forwarded quotes IPv6 and ports); nullopt for
// anything else ("unknown", "_hidden", garbage).
std::optional<address> HopAddress(std::string_view hop) {
  hop = adapters::TrimOws(hop);
  if (hop.size() >= 2 && hop.front() == '"' && hop.back() == '"') {
    hop = hop.substr(1, hop.size() - 2);
  }
  if (hop.empty() || hop.size() > 64) {
    return std::nullopt;
  }
  std::string_view literal = hop;
  if (hop.front() == '[') {
    const size_t close = hop.find(']');
    if (close == std::string_view::npos) {
      return std::nullopt;
    }
    literal = hop.substr(1, close - 1);
  } else if (const size_t colon = hop.find(':');
             colon != std::string_view::npos &&
             hop.find(':', colon + 1) == std::string_view::npos) {
    literal = hop.substr(0, colon);  // IPv4 with a port
  }
  boost::system::error_code ec;
  const address a = boost::asio::ip::make_address(std::string(literal), ec);
  if (ec) {
    return std::nullopt;
  }
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return address(a.to_v6().to_v4());
  }
  return a;
}

// Appends the hops of one header line, left to right. A Forwarded element is
// "for=...;proto=...;by=..." (RFC 7239 section 4); elements are comma-separated. Elements
// without a for= are hops we cannot name: an empty text stands for them.
void AppendHops(std::string_view value, bool forwarded, std::vector<std::string_view>& hops) {
  while (!value.empty() && hops.size() <= 4 * TrustedProxies::kMaxHops) {
    const size_t comma = value.find(',');
    std::string_view element = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    if (!forwarded) {
      hops.push_back(adapters::TrimOws(element));
      continue;
    }
    std::string_view for_value;
    while (!element.empty()) {
      const size_t semi = element.find(';');
      std::string_view pair = adapters::TrimOws(element.substr(0, semi));
      element = semi == std::string_view::npos ? std::string_view() : element.substr(semi + 1);
      if (pair.size() > 4 && (pair[0] == 'f' || pair[0] == 'F') &&
          (pair[1] == 'o' || pair[1] == 'O') && (pair[2] == 'r' || pair[2] == 'R') &&
          pair[3] == '=') {
        for_value = pair.substr(4);
      }
    }
    hops.push_back(for_value);
  }
}

}  // namespace

Result<TrustedProxies> TrustedProxies::Parse(const std::vector<std::string>& cidrs) {
  TrustedProxies proxies;
  for (const std::string& cidr : cidrs) {
    Result<adapters::IpNetwork> network = adapters::IpNetwork::Parse(cidr);
    if (!network) {
      return Status::InvalidArgument(
          fmt::format("'{}': {}", cidr.substr(0, 64), network.error().message()));
    }
    proxies.networks_.push_back(*network);
  }
  return proxies;
}

bool TrustedProxies::Trusts(const address& a) const {
  if (networks_.empty() || a.is_unspecified()) {
    return false;
  }
  const adapters::IpAddress ip = ToIp(a);
  for (const adapters::IpNetwork& network : networks_) {
    if (network.Contains(ip)) {
      return true;
    }
  }
  return false;
}

address TrustedProxies::ClientOf(const address& peer, const http::fields& fields) const {
  if (!Trusts(peer)) {
    return peer;
  }
  const bool forwarded = fields.find(http::field::forwarded) != fields.end();
  std::vector<std::string_view> hops;
  const auto range = forwarded ? fields.equal_range(http::field::forwarded)
                               : fields.equal_range("X-Forwarded-For");
  for (auto field = range.first; field != range.second; ++field) {
    const boost::beast::string_view v = field->value();
    AppendHops({v.data(), v.size()}, forwarded, hops);
  }
  address client = peer;
  size_t read = 0;
  for (auto it = hops.rbegin(); it != hops.rend() && read < kMaxHops; ++it, ++read) {
    const std::optional<address> hop = HopAddress(*it);
    if (!hop) {
      return client;  // the trusted hop that recorded what cannot be named
    }
    client = *hop;
    if (!Trusts(client)) {
      return client;
    }
  }
  return client;
}

std::string AddressKey(const address& a) {
  if (a.is_v4()) {
    const auto b = a.to_v4().to_bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) {
    const auto b = v6.to_v4().to_bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  const auto b = v6.to_bytes();
  return std::string("6", 1) + std::string(reinterpret_cast<const char*>(b.data()), 8);
}

}  // namespace egress::service
