#include <string>

#include "config/toml_sections.h"

namespace egress::config {

Status ReadClusterSection(const TomlFields& cluster, ClusterOptions& out) {
  Status status = cluster.CheckKeys(
      {"redis_url", "password", "node_id", "key_prefix", "expected_nodes", "on_redis_down"});
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
  std::string mode;
  if (status = cluster.ReadString("on_redis_down", mode); !status.ok()) {
    return status;
  }
  if (cluster.Has("on_redis_down")) {
    if (mode == "local_share") {
      out.on_redis_down = RedisDownMode::kLocalShare;
    } else if (mode == "hold") {
      out.on_redis_down = RedisDownMode::kHold;
    } else {
      return cluster.Error(*cluster.table().get("on_redis_down"), cluster.Field("on_redis_down"),
                           "must be \"local_share\" or \"hold\"");
    }
  }
  if (!out.enabled() && (cluster.Has("password") || cluster.Has("node_id"))) {
    return cluster.TableError("cluster.redis_url", "is required by the other cluster keys");
  }
  return Status::Ok();
}

}  // namespace egress::config
