#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress::config {

// What a node does with its budgets while Redis cannot be reached (cluster.on_redis_down).
enum class RedisDownMode : uint8_t {
  kLocalShare,  // pace every scope in memory at 1/expected_nodes of its budget
  kHold,        // send nothing paced; heads wait with budget_store_unavailable
};

// Where the shared budgets live, parsed from cluster.redis_url. Plain data.
struct RedisAddress {
  std::string host;
  uint16_t port = 6379;
  int64_t db = 0;
  // From the URL's userinfo or cluster.password; a secret: never log it. Empty: no AUTH.
  std::string password;
};

// [cluster]: several nodes sharing every budget through Redis (docs/deployment.md). Without a
// redis_url (enabled() false) the node keeps its budgets in memory, as a single node does.
struct ClusterOptions {
  // cluster.redis_url, parsed. Empty host: no cluster.
  RedisAddress redis;
  // This node's name in Redis and in logs. Default: empty, which the service turns into
  // "<hostname>:<listen port>".
  std::string node_id;
  // Prefix of every Redis key this node writes. Default: "relay-egress:".
  std::string key_prefix = "relay-egress:";
  // How many nodes share the budgets; while Redis is down, local_share paces each scope at
  // 1/expected_nodes of its budget. 1 to 1000. Default: 1.
  int64_t expected_nodes = 1;
  // Default: local_share.
  RedisDownMode on_redis_down = RedisDownMode::kLocalShare;

  bool enabled() const { return !redis.host.empty(); }
};

// Longest key_prefix accepted.
inline constexpr size_t kMaxKeyPrefix = 64;

// `url` with its userinfo (the password) replaced by "(redacted)", for --print-config: the
// userinfo is everything before the last '@' after the scheme, as ParseRedisUrl reads it (a
// password may hold '/', '?' or '#', where a generic URL scan would stop).
std::string RedactRedisUrl(std::string_view url);

// Parses "redis://[[user]:password@]host[:port][/db]". "rediss://" (TLS) is refused: Debian 12's
// hiredis (0.14) ships no hiredis-ssl. The host is a name, an IPv4 literal or a bracketed IPv6
// literal; the port 1 to 65535 (default 6379); db 0 to 2^31-1 (default 0). InvalidArgument naming
// the problem; the message never repeats the URL (it may hold a password).
Result<RedisAddress> ParseRedisUrl(std::string_view url);

}  // namespace egress::config
