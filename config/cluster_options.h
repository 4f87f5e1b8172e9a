#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/aws_credentials.h"
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

// Where the shared meters and parks live (cluster.budget_store).
enum class BudgetStoreKind : uint8_t {
  kRedis,     // cluster.redis_url (the default)
  kDynamoDb,  // a DynamoDB table: across regions, or without a Redis to run
};

// The DynamoDB table of cluster.budget_store = "dynamodb". Plain data.
struct DynamoDbTable {
  std::string table;   // cluster.dynamodb_table: 3 to 255 of [A-Za-z0-9_.-]
  std::string region;  // cluster.dynamodb_region, e.g. "eu-west-1"
  // cluster.dynamodb_endpoint; default "https://dynamodb.<region>.amazonaws.com".
  std::string endpoint;
  bool create_table = false;  // cluster.dynamodb_create_table
  // cluster.dynamodb_credentials_file (an AWS shared credentials file) and its profile
  // (cluster.dynamodb_profile, default "default"); without a file, the standard variables
  // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.
  std::string credentials_file;
  std::string profile = "default";
  // Read from either when the config is loaded. Secrets: never log them.
  adapters::AwsCredentials credentials;
};

// [cluster]: several nodes sharing every budget through Redis or DynamoDB (docs/deployment.md).
// With neither (enabled() false) the node keeps its budgets in memory, as a single node does.
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
  // cluster.on_budget_store_down (also read as on_redis_down). Default: local_share.
  RedisDownMode on_redis_down = RedisDownMode::kLocalShare;
  // Default: redis.
  BudgetStoreKind budget_store = BudgetStoreKind::kRedis;
  DynamoDbTable dynamodb;  // with budget_store = dynamodb

  bool enabled() const { return !redis.host.empty() || budget_store == BudgetStoreKind::kDynamoDb; }
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
