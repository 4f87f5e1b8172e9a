#include <algorithm>
#include <string>

#include "config/toml_sections.h"

namespace egress::config {
namespace {

bool ValidTableName(std::string_view name) {
  return name.size() >= 3 && name.size() <= 255 &&
         name.find_first_not_of(
             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
             std::string_view::npos;
}

// Whether an http:// URL names this machine: 127.0.0.0/8, [::1] or localhost, with any port.
bool LoopbackHttp(std::string_view url) {
  std::string_view host = url.substr(std::string_view("http://").size());
  host = host.substr(0, host.find('/'));
  if (host.starts_with("[::1]")) {
    return host.size() == 5 || host[5] == ':';
  }
  host = host.substr(0, host.find(':'));
  if (host == "localhost") {
    return true;
  }
  // An IPv4 literal in 127.0.0.0/8: four parts of digits, the first 127.
  return host.starts_with("127.") && std::count(host.begin(), host.end(), '.') == 3 &&
         host.find_first_not_of("0123456789.") == std::string_view::npos &&
         host.find("..") == std::string_view::npos && !host.ends_with('.');
}

// budget_store and the dynamodb_* keys.
Status ReadDynamoDb(const TomlFields& cluster, ClusterOptions& out) {
  std::string store;
  if (Status status = cluster.ReadString("budget_store", store); !status.ok()) {
    return status;
  }
  if (cluster.Has("budget_store")) {
    if (store == "redis") {
      out.budget_store = BudgetStoreKind::kRedis;
    } else if (store == "dynamodb") {
      out.budget_store = BudgetStoreKind::kDynamoDb;
    } else {
      return cluster.Error(*cluster.table().get("budget_store"), cluster.Field("budget_store"),
                           "must be \"redis\" or \"dynamodb\"");
    }
  }
  DynamoDbTable& d = out.dynamodb;
  for (const auto& [key, field] :
       {std::pair{"dynamodb_table", &d.table}, std::pair{"dynamodb_region", &d.region},
        std::pair{"dynamodb_endpoint", &d.endpoint},
        std::pair{"dynamodb_credentials_file", &d.credentials_file},
        std::pair{"dynamodb_profile", &d.profile}}) {
    if (Status status = cluster.ReadString(key, *field); !status.ok()) {
      return status;
    }
    if (cluster.Has(key) && out.budget_store != BudgetStoreKind::kDynamoDb) {
      return cluster.Error(*cluster.table().get(key), cluster.Field(key),
                           "requires budget_store = \"dynamodb\"");
    }
  }
  if (Status status = cluster.ReadBool("dynamodb_create_table", d.create_table); !status.ok()) {
    return status;
  }
  if (cluster.Has("dynamodb_create_table") && out.budget_store != BudgetStoreKind::kDynamoDb) {
    return cluster.Error(*cluster.table().get("dynamodb_create_table"),
                         cluster.Field("dynamodb_create_table"),
                         "requires budget_store = \"dynamodb\"");
  }
  if (out.budget_store != BudgetStoreKind::kDynamoDb) {
    return Status::Ok();
  }
  if (!ValidTableName(d.table)) {
    return cluster.TableError(cluster.Field("dynamodb_table"),
                              "must be 3 to 255 letters, digits, '_', '.' or '-'");
  }
  if (d.region.empty() || d.region.size() > 32 ||
      d.region.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
    return cluster.TableError(cluster.Field("dynamodb_region"),
                              "must be an AWS region such as \"eu-west-1\"");
  }
  if (d.endpoint.empty()) {
    // AWS's China regions are under their own domain.
    d.endpoint = "https://dynamodb." + d.region +
                 (d.region.starts_with("cn-") ? ".amazonaws.com.cn" : ".amazonaws.com");
  } else if (!(d.endpoint.starts_with("https://") || d.endpoint.starts_with("http://")) ||
             d.endpoint.size() > 512 ||
             d.endpoint.find_first_of(" \t\r\n?#@") != std::string::npos) {
    return cluster.Error(*cluster.table().get("dynamodb_endpoint"),
                         cluster.Field("dynamodb_endpoint"),
                         "must be an http:// or https:// URL without query, fragment or userinfo");
  } else if (d.endpoint.starts_with("http://") && !LoopbackHttp(d.endpoint)) {
    // The signature and a session token would cross the network in the clear.
    return cluster.Error(*cluster.table().get("dynamodb_endpoint"),
                         cluster.Field("dynamodb_endpoint"),
                         "http:// is for a local server only (127.0.0.1, [::1], localhost): use "
                         "https://");
  }
  if (d.profile.empty() || d.profile.size() > 128) {
    return cluster.TableError(cluster.Field("dynamodb_profile"), "must be 1 to 128 characters");
  }
  return Status::Ok();
}

}  // namespace

Status ReadClusterSection(const TomlFields& cluster, ClusterOptions& out) {
  Status status =
      cluster.CheckKeys({"redis_url", "password", "node_id", "key_prefix", "expected_nodes",
                         "on_redis_down", "on_budget_store_down", "budget_store", "dynamodb_table",
                         "dynamodb_region", "dynamodb_endpoint", "dynamodb_create_table",
                         "dynamodb_credentials_file", "dynamodb_profile"});
  if (!status.ok()) {
    return status;
  }
  std::string url;
  if (status = cluster.ReadString("redis_url", url); !status.ok()) {
    return status;
  }
  if (cluster.Has("redis_url")) {
    Result<RedisAddress> address = ParseRedisUrl(url);
    if (!address) {
      return cluster.Error(*cluster.table().get("redis_url"), cluster.Field("redis_url"),
                           address.error().message());
    }
    std::string password = std::move(out.redis.password);
    out.redis = std::move(*address);
    if (out.redis.password.empty()) {
      out.redis.password = std::move(password);
    }
  }
  if (cluster.Has("password")) {
    std::string password;
    if (status = cluster.ReadSecret("password", password); !status.ok()) {
      return status;
    }
    out.redis.password = std::move(password);
  }
  if (status = cluster.ReadString("node_id", out.node_id); !status.ok()) {
    return status;
  }
  if (cluster.Has("node_id") && (out.node_id.empty() || out.node_id.size() > 128 ||
                                 out.node_id.find_first_of(" \t\r\n") != std::string::npos)) {
    return cluster.Error(*cluster.table().get("node_id"), cluster.Field("node_id"),
                         "must be 1 to 128 characters without white space");
  }
  if (status = cluster.ReadString("key_prefix", out.key_prefix); !status.ok()) {
    return status;
  }
  if (cluster.Has("key_prefix") &&
      (out.key_prefix.empty() || out.key_prefix.size() > kMaxKeyPrefix)) {
    return cluster.Error(*cluster.table().get("key_prefix"), cluster.Field("key_prefix"),
                         "must be 1 to 64 characters");
  }
  if (status = cluster.ReadInt("expected_nodes", 1, 1000, out.expected_nodes); !status.ok()) {
    return status;
  }
  if (cluster.Has("on_redis_down") && cluster.Has("on_budget_store_down")) {
    return cluster.TableError(cluster.Field("on_budget_store_down"),
                              "set on_budget_store_down or on_redis_down, not both");
  }
  for (const char* key : {"on_budget_store_down", "on_redis_down"}) {
    std::string mode;
    if (status = cluster.ReadString(key, mode); !status.ok()) {
      return status;
    }
    if (!cluster.Has(key)) {
      continue;
    }
    if (mode == "local_share") {
      out.on_redis_down = RedisDownMode::kLocalShare;
    } else if (mode == "hold") {
      out.on_redis_down = RedisDownMode::kHold;
    } else {
      return cluster.Error(*cluster.table().get(key), cluster.Field(key),
                           "must be \"local_share\" or \"hold\"");
    }
  }
  if (status = ReadDynamoDb(cluster, out); !status.ok()) {
    return status;
  }
  if (cluster.Has("budget_store") && out.budget_store == BudgetStoreKind::kRedis &&
      out.redis.host.empty()) {
    return cluster.TableError("cluster.redis_url", "is required by budget_store = \"redis\"");
  }
  if (out.redis.host.empty() && cluster.Has("password")) {
    return cluster.TableError("cluster.redis_url", "is required by cluster.password");
  }
  if (!out.enabled() && cluster.Has("node_id")) {
    return cluster.TableError("cluster.redis_url", "is required by the other cluster keys");
  }
  return Status::Ok();
}

}  // namespace egress::config
