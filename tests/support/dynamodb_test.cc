#include "tests/support/dynamodb_test.h"

namespace egress {

void DynamoTest::SetUp() {
  if (DynaliteServer::Binary().empty()) {
    GTEST_SKIP() << "dynalite is not installed (./dev test installs it)";
  }
  ASSERT_NE(dynalite_.port(), 0) << dynalite_.error();
  transport_ = adapters::NewCurlTransport(io_, clock_, adapters::TransportOptions{});
}

void DynamoTest::TearDown() {
  if (transport_) {
    transport_->CancelAll();
    io_.poll();
  }
}

adapters::DynamoDbOptions DynamoTest::Options() const {
  adapters::DynamoDbOptions options;
  options.endpoint = dynalite_.Url();
  options.region = "us-east-1";
  options.table = "relay-egress-test";
  options.credentials = {"AKIDTEST", "test-secret", ""};
  options.create_table = true;
  options.probe_every = std::chrono::milliseconds(50);
  return options;
}

std::unique_ptr<adapters::DynamoDbClient> DynamoTest::Connect() {
  auto client =
      std::make_unique<adapters::DynamoDbClient>(io_, clock_, *transport_, random_, Options());
  client->Start();
  if (!RunUntil([&] { return client->up(); })) {
    ADD_FAILURE() << "no answer from dynalite on port " << dynalite_.port();
    return nullptr;
  }
  return client;
}

}  // namespace egress
