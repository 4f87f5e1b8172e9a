#include "tests/support/redis_test.h"

namespace egress {

void RedisTest::SetUp() {
  if (RedisServer::Binary().empty()) {
    GTEST_SKIP() << "no redis-server";
  }
  ASSERT_NE(redis_.port(), 0) << redis_.error();
}

std::unique_ptr<adapters::RedisConnection> RedisTest::Connect() {
  adapters::RedisConnectionOptions options;
  options.port = static_cast<uint16_t>(redis_.port());
  auto connection = std::make_unique<adapters::RedisConnection>(io_, clock_, options);
  connection->Start();
  if (!RunUntil([&] { return connection->up(); })) {
    ADD_FAILURE() << "no connection to redis-server on port " << redis_.port();
    return nullptr;
  }
  return connection;
}

}  // namespace egress
