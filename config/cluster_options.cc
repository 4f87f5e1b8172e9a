#include "config/cluster_options.h"

#include <charconv>

#include "dispatcher/base/host_port.h"

namespace egress::config {
namespace {

constexpr std::string_view kScheme = "redis://";
constexpr std::string_view kTlsScheme = "rediss://";
constexpr int64_t kMaxDb = 2147483647;

}  // namespace

std::string RedactRedisUrl(std::string_view url) {
  const size_t scheme_end = url.find("://");
  const size_t at = url.rfind('@');
  if (scheme_end == std::string_view::npos || at == std::string_view::npos || at < scheme_end) {
    return std::string(url);
  }
  return std::string(url.substr(0, scheme_end + 3)) + "(redacted)" + std::string(url.substr(at));
}

Result<RedisAddress> ParseRedisUrl(std::string_view url) {
  if (url.substr(0, kTlsScheme.size()) == kTlsScheme) {
    return Status::InvalidArgument(
        "rediss:// (TLS) is not supported: Debian 12's hiredis 0.14 has no hiredis-ssl; use "
        "redis:// on a private network or a TLS tunnel to Redis");
  }
  if (url.substr(0, kScheme.size()) != kScheme) {
    return Status::InvalidArgument("must start with redis://");
  }
  std::string_view rest = url.substr(kScheme.size());
  RedisAddress address;
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument("userinfo must be [user]:password");
    }
    if (colon != 0) {
      return Status::InvalidArgument("a user name needs Redis 6 ACLs; give only :password");
    }
    address.password = std::string(userinfo.substr(colon + 1));
    if (address.password.empty()) {
      return Status::InvalidArgument("the password after ':' is empty");
    }
  }
  std::string_view authority = rest;
  std::string_view db_text;
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    db_text = rest.substr(slash + 1);
  }
  if (authority.find_first_of("?#") != std::string_view::npos ||
      db_text.find_first_of("?#/") != std::string_view::npos) {
    return Status::InvalidArgument("query, fragment or path past the db are not allowed");
  }
  // Without a port, add the default one so that ParseHostPort reads the host alike.
  std::string with_port(authority);
  const bool bracketed = !authority.empty() && authority.front() == '[';
  const size_t host_end = bracketed ? authority.find(']') : std::string_view::npos;
  const bool has_port = bracketed ? (host_end != std::string_view::npos &&
                                     authority.substr(host_end + 1).starts_with(":"))
                                  : authority.find(':') != std::string_view::npos;
  if (!has_port) {
    with_port += ":6379";
  }
  Result<HostPort> host = ParseHostPort(with_port);
  if (!host) {
    return Status::InvalidArgument("host: " + host.error().message());
  }
  if (host->port == 0) {
    return Status::InvalidArgument("port must be from 1 to 65535");
  }
  address.host = host->host;
  address.port = host->port;
  if (!db_text.empty()) {
    int64_t db = -1;
    auto [end, ec] = std::from_chars(db_text.data(), db_text.data() + db_text.size(), db);
    if (ec != std::errc() || end != db_text.data() + db_text.size() || db < 0 || db > kMaxDb ||
        (db_text.size() > 1 && db_text.front() == '0')) {
      return Status::InvalidArgument("db must be a number from 0 to 2147483647");
    }
    address.db = db;
  }
  return address;
}

}  // namespace egress::config
