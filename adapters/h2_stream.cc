#include "adapters/h2_stream.h"

#include <algorithm>

#include <fmt/format.h>

#include "adapters/ip_address.h"
#include "adapters/url_parts.h"

namespace egress::adapters::h2 {
namespace {

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
         c == ':';
}

}  // namespace

Result<Target> ParseHttpsTarget(std::string_view url) {
  constexpr std::string_view kScheme = "https://";
  if (!IsHttpsUrl(url) || !IsHttpUrl(url)) {
    return Status::InvalidArgument(fmt::format("{}: not an https:// URL", url));
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t end = rest.find_first_of("/?#");
  const std::string authority = ToLowerAscii(rest.substr(0, end));
  std::string_view path = end == std::string_view::npos ? "" : rest.substr(end);
  path = path.substr(0, path.find('#'));
  if (authority.find('@') != std::string::npos) {
    return Status::InvalidArgument(fmt::format("{}: user information in the URL", url));
  }
  Target t;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) {
      return Status::InvalidArgument(fmt::format("{}: unclosed IPv6 literal", url));
    }
    t.host = authority.substr(1, close - 1);
    std::string_view after = std::string_view(authority).substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      return Status::InvalidArgument(fmt::format("{}: malformed host", url));
    }
    port = after.empty() ? "" : after.substr(1);
    if (!IpAddress::Parse(t.host).has_value()) {
      return Status::InvalidArgument(fmt::format("{}: malformed IPv6 literal", url));
    }
  } else {
    const size_t colon = authority.find(':');
    t.host = authority.substr(0, colon);
    port = colon == std::string::npos ? "" : std::string_view(authority).substr(colon + 1);
    if (t.host.empty() || !std::all_of(t.host.begin(), t.host.end(), IsHostChar) ||
        t.host.find(':') != std::string::npos) {
      return Status::InvalidArgument(fmt::format("{}: malformed host", url));
    }
  }
  if (port.empty()) {
    t.port = "443";
  } else {
    int value = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || value > 65535) {
        return Status::InvalidArgument(fmt::format("{}: malformed port", url));
      }
      value = value * 10 + (c - '0');
    }
    if (value < 1 || value > 65535) {
      return Status::InvalidArgument(fmt::format("{}: port out of range", url));
    }
    t.port = std::to_string(value);
    t.port_number = static_cast<uint16_t>(value);
  }
  t.authority = authority;
  t.origin = "https://" + authority;
  t.path = path.empty() ? "/" : path.front() == '?' ? "/" + std::string(path) : std::string(path);
  return t;
}

}  // namespace egress::adapters::h2
