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

// Verifies the DynamoDB budget store's keys: read, the endpoint's default from the region, and
// the credentials from the standard variables or a shared credentials file's profile.
TEST(ClusterConfigTest, ReadsTheDynamoDbKeys) {
  ConfigFiles files;
  const std::string base =
      "[cluster]\nbudget_store = \"dynamodb\"\ndynamodb_table = \"relay-egress.budgets\"\n"
      "dynamodb_region = \"eu-west-1\"\non_budget_store_down = \"hold\"\n";
  Result<Config> config = files.Load(base, {{"AWS_ACCESS_KEY_ID", "AKIDENV"},
                                            {"AWS_SECRET_ACCESS_KEY", "env-secret"},
                                            {"AWS_SESSION_TOKEN", "env-token"}});
  ASSERT_TRUE(config.has_value()) << config.error().message();
  const ClusterOptions& c = config->cluster;
  EXPECT_TRUE(c.enabled());
  EXPECT_TRUE(c.redis.host.empty());
  EXPECT_EQ(c.budget_store, BudgetStoreKind::kDynamoDb);
  EXPECT_EQ(c.dynamodb.table, "relay-egress.budgets");
  EXPECT_EQ(c.dynamodb.endpoint, "https://dynamodb.eu-west-1.amazonaws.com");
  EXPECT_FALSE(c.dynamodb.create_table);
  EXPECT_EQ(c.on_redis_down, RedisDownMode::kHold);
  EXPECT_EQ(c.dynamodb.credentials.access_key_id, "AKIDENV");
  EXPECT_EQ(c.dynamodb.credentials.secret_access_key, "env-secret");
  EXPECT_EQ(c.dynamodb.credentials.session_token, "env-token");

  const std::string file = files.dir().Sub("credentials");
  ConfigFiles::Write(file,
                     "# written by aws configure\n[default]\naws_access_key_id = AKIDDEF\n"
                     "aws_secret_access_key = def\n\n[relay]\r\naws_access_key_id=AKIDRELAY\r\n"
                     "aws_secret_access_key = relay-secret\r\n");
  config = files.Load(base +
                      "dynamodb_endpoint = \"http://127.0.0.1:8000\"\n"
                      "dynamodb_create_table = true\ndynamodb_credentials_file = \"" +
                      file + "\"\ndynamodb_profile = \"relay\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  EXPECT_EQ(config->cluster.dynamodb.endpoint, "http://127.0.0.1:8000");
  EXPECT_TRUE(config->cluster.dynamodb.create_table);
  EXPECT_EQ(config->cluster.dynamodb.credentials.access_key_id, "AKIDRELAY");
  EXPECT_EQ(config->cluster.dynamodb.credentials.secret_access_key, "relay-secret");
  EXPECT_TRUE(config->cluster.dynamodb.credentials.session_token.empty());
  config = files.Load(
      "[cluster]\nbudget_store = \"dynamodb\"\ndynamodb_table = \"budgets\"\n"
      "dynamodb_region = \"cn-north-1\"\ndynamodb_credentials_file = \"" +
      file + "\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  EXPECT_EQ(config->cluster.dynamodb.endpoint, "https://dynamodb.cn-north-1.amazonaws.com.cn");
}

// Verifies the DynamoDB keys are validated, each error naming its field and none repeating a
// secret.
TEST(ClusterConfigTest, ValidatesTheDynamoDbKeys) {
  ConfigFiles files;
  const std::string file = files.dir().Sub("credentials");
  ConfigFiles::Write(file, "[other]\naws_access_key_id = AKIDX\naws_secret_access_key = sec\n");
  const std::string store = "[cluster]\nbudget_store = \"dynamodb\"\n";
  const std::string table = "dynamodb_table = \"budgets\"\n";
  const std::string region = "dynamodb_region = \"us-east-1\"\n";
  struct Case {
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      {"[cluster]\nbudget_store = \"memcached\"\n",
       "2: cluster.budget_store: must be \"redis\" or \"dynamodb\""},
      {"[cluster]\nbudget_store = \"redis\"\n",
       "1: cluster.redis_url: is required by budget_store = \"redis\""},
      {"[cluster]\nredis_url = \"redis://h\"\n" + table,
       "3: cluster.dynamodb_table: requires budget_store = \"dynamodb\""},
      {store + "dynamodb_table = \"a b\"\n" + region,
       "1: cluster.dynamodb_table: must be 3 to 255 letters, digits, '_', '.' or '-'"},
      {store + region,
       "1: cluster.dynamodb_table: must be 3 to 255 letters, digits, '_', '.' or '-'"},
      {store + table + "dynamodb_region = \"EU West\"\n",
       "1: cluster.dynamodb_region: must be an AWS region such as \"eu-west-1\""},
      {store + table + region + "dynamodb_endpoint = \"ftp://h\"\n",
       "5: cluster.dynamodb_endpoint: must be an http:// or https:// URL without query, "
       "fragment or userinfo"},
      {store + table + region + "dynamodb_endpoint = \"https://user:pw@h\"\n",
       "5: cluster.dynamodb_endpoint: must be an http:// or https:// URL without query, "
       "fragment or userinfo"},
      {store + table + region + "dynamodb_endpoint = \"http://dynamo.internal:8000\"\n",
       "5: cluster.dynamodb_endpoint: http:// is for a local server only (127.0.0.1, [::1], "
       "localhost): use https://"},
      {store + table + region + "dynamodb_endpoint = \"http://127.0.0.1.evil.example/\"\n",
       "5: cluster.dynamodb_endpoint: http:// is for a local server only (127.0.0.1, [::1], "
       "localhost): use https://"},
      {"[cluster]\nredis_url = \"redis://h\"\ndynamodb_create_table = true\n",
       "3: cluster.dynamodb_create_table: requires budget_store = \"dynamodb\""},
      {store + table + region + "on_redis_down = \"hold\"\non_budget_store_down = \"hold\"\n",
       "1: cluster.on_budget_store_down: set on_budget_store_down or on_redis_down, not both"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<Config> config = files.Load(c.text);
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().message(), files.main_path() + ":" + c.error);
  }
  // Credentials: missing, or a file without the profile.
  Result<Config> config = files.Load(store + table + region, {{"AWS_ACCESS_KEY_ID", "AKIDONLY"}});
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message(),
            "cluster.dynamodb: no AWS credentials: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or cluster.dynamodb_credentials_file");
  config = files.Load(store + table + region + "dynamodb_credentials_file = \"" + file + "\"\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message(),
            "cluster.dynamodb: AWS credentials file " + file + ": no profile [default]");
  EXPECT_EQ(config.error().message().find("sec\n"), std::string::npos);
}

}  // namespace
}  // namespace egress::config
