#pragma once

#include <chrono>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/redis_connection.h"
#include "dispatcher/base/clock.h"
#include "tests/support/redis_server.h"

namespace egress {

// A fixture base for tests against a real redis-server: one server on a free port per test and
// connections to it, driven by running one loop on the test thread. SetUp skips the test when
// no redis-server is installed and fails it when the server did not start.
class RedisTest : public ::testing::Test {
 protected:
  void SetUp() override;

  // A started connection to the server, up (nullptr, with a failure, when it never came up).
  std::unique_ptr<adapters::RedisConnection> Connect();

  // Runs the loop until `done()` or a generous deadline (liveness only); returns `done()`.
  template <typename Done>
  bool RunUntil(Done done) {
    for (int i = 0; i < 20'000 && !done(); ++i) {
      io_.run_for(std::chrono::milliseconds(1));
      io_.restart();
    }
    return done();
  }

  SystemClock clock_;
  RedisServer redis_;
  boost::asio::io_context io_;
};

// Two nodes' connections to the one server (connections_[0] and [1]), up after SetUp.
class RedisTwoNodesTest : public RedisTest {
 protected:
  void SetUp() override {
    RedisTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    for (auto& connection : connections_) {
      connection = Connect();
      ASSERT_NE(connection, nullptr);
    }
  }

  std::unique_ptr<adapters::RedisConnection> connections_[2];
};

}  // namespace egress
