#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/curl_transport.h"
#include "adapters/dynamodb_client.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/random.h"
#include "tests/support/dynalite_server.h"

namespace egress {

// A fixture base for tests against a real DynamoDB-compatible server (dynalite, on a free
// loopback port, one per test) and clients of it, driven by running one loop on the test thread.
// SetUp skips the test when dynalite is not installed and fails it when it did not start.
class DynamoTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Options for a client of the server: table "relay-egress-test", created when missing, test
  // credentials, short probes.
  adapters::DynamoDbOptions Options() const;
  // A started client, up (nullptr, with a failure, when it never came up).
  std::unique_ptr<adapters::DynamoDbClient> Connect();

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
  SplitMixRandom random_{7};
  DynaliteServer dynalite_;
  boost::asio::io_context io_;
  std::unique_ptr<adapters::HttpTransport> transport_;
};

}  // namespace egress
