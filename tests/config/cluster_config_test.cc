#include <gtest/gtest.h>

#include "config/cluster_options.h"
#include "config/load_config.h"
#include "tests/config/config_files.h"

namespace egress::config {
namespace {

// Verifies that a config without [cluster] keeps budgets in memory, with the documented defaults.
TEST(ClusterConfigTest, DisabledByDefault) {
  ConfigFiles files;
  Result<Config> config = files.Load("");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  EXPECT_FALSE(config->cluster.enabled());
  EXPECT_EQ(config->cluster.key_prefix, "relay-egress:");
  EXPECT_EQ(config->cluster.expected_nodes, 1);
  EXPECT_EQ(config->cluster.on_redis_down, RedisDownMode::kLocalShare);
  EXPECT_TRUE(config->cluster.node_id.empty());
}

// Verifies every [cluster] key is read.
TEST(ClusterConfigTest, ReadsEveryKey) {
  ConfigFiles files;
  Result<Config> config = files.Load(
      "[cluster]\n"
      "redis_url = \"redis://10.0.0.5:6380/3\"\n"
      "password = \"s3cret\"\n"
      "node_id = \"node-a\"\n"
      "key_prefix = \"prod:\"\n"
      "expected_nodes = 3\n"
      "on_redis_down = \"hold\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  const ClusterOptions& c = config->cluster;
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.redis.host, "10.0.0.5");
  EXPECT_EQ(c.redis.port, 6380);
  EXPECT_EQ(c.redis.db, 3);
  EXPECT_EQ(c.redis.password, "s3cret");
  EXPECT_EQ(c.node_id, "node-a");
  EXPECT_EQ(c.key_prefix, "prod:");
  EXPECT_EQ(c.expected_nodes, 3);
  EXPECT_EQ(c.on_redis_down, RedisDownMode::kHold);
}

// Verifies the URL forms: default port and db, a password in the URL, IPv6.
TEST(ClusterConfigTest, ParsesRedisUrls) {
  Result<RedisAddress> a = ParseRedisUrl("redis://localhost");
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_EQ(a->host, "localhost");
  EXPECT_EQ(a->port, 6379);
  EXPECT_EQ(a->db, 0);
  EXPECT_TRUE(a->password.empty());
  Result<RedisAddress> b = ParseRedisUrl("redis://:pw@[::1]:7000/0");
  ASSERT_TRUE(b.has_value()) << b.error().message();
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 7000);
  EXPECT_EQ(b->password, "pw");
  Result<RedisAddress> c = ParseRedisUrl("redis://[::1]/2");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->port, 6379);
  EXPECT_EQ(c->db, 2);
}

// Verifies hostile or unsupported URLs get a typed error that never repeats the password.
TEST(ClusterConfigTest, RefusesBadUrls) {
  for (const char* url :
       {"", "http://x", "redis://", "redis://host:0", "redis://host:99999", "redis://host/x",
        "redis://host/01", "redis://host/-1", "redis://host/1/2", "redis://host?db=1",
        "redis://user:pw@host", "redis://:@host", "redis://nopass@host", "redis://ho st",
        "redis://host:6379/99999999999"}) {
    SCOPED_TRACE(url);
    Result<RedisAddress> r = ParseRedisUrl(url);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(r.error().message().find("pw"), std::string::npos);
  }
}

// Verifies rediss:// is refused with the reason (no hiredis-ssl in Debian 12), at its line.
TEST(ClusterConfigTest, RefusesTlsWithReason) {
  ConfigFiles files;
  Result<Config> config = files.Load("[cluster]\nredis_url = \"rediss://:topsecret@h:6380\"\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
  const std::string& message = config.error().message();
  EXPECT_NE(message.find(":2: cluster.redis_url: rediss:// (TLS) is not supported"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("hiredis-ssl"), std::string::npos);
  EXPECT_EQ(message.find("topsecret"), std::string::npos);
}

// Verifies the other keys are validated, each error naming its field.
TEST(ClusterConfigTest, ValidatesKeys) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"[cluster]\nredis_url = \"redis://h\"\nexpected_nodes = 0\n",
       "3: cluster.expected_nodes: must be an integer from 1 to 1000"},
      {"[cluster]\nredis_url = \"redis://h\"\non_redis_down = \"drop\"\n",
       "3: cluster.on_redis_down: must be \"local_share\" or \"hold\""},
      {"[cluster]\nredis_url = \"redis://h\"\nkey_prefix = \"\"\n",
       "3: cluster.key_prefix: must be 1 to 64 characters"},
      {"[cluster]\nredis_url = \"redis://h\"\nnode_id = \"a b\"\n",
       "3: cluster.node_id: must be 1 to 128 characters without white space"},
      {"[cluster]\nredis_urll = \"redis://h\"\n", "2: cluster.redis_urll: unknown key"},
      {"[cluster]\nnode_id = \"a\"\n",
       "1: cluster.redis_url: is required by the other cluster keys"},
  };
  ConfigFiles files;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<Config> config = files.Load(c.text);
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().message(), files.main_path() + ":" + c.error);
  }
}

}  // namespace
}  // namespace egress::config
