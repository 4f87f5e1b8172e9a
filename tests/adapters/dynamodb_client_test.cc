#include "adapters/dynamodb_client.h"

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

namespace egress::adapters {
namespace {

using nlohmann::json;

// Answers each request with the next scripted response (posted, as a transport does).
class ScriptedTransport final : public HttpTransport {
 public:
  explicit ScriptedTransport(boost::asio::io_context& io) : io_(io) {}
  void Send(HttpRequest request, HttpCallback done) override {
    requests.push_back(request);
    Result<HttpResponse> answer = Status::Unavailable("no scripted answer");
    if (!answers.empty()) {
      answer = answers.front();
      answers.pop_front();
    }
    boost::asio::post(io_, [done = std::move(done), answer]() { done(answer); });
  }
  size_t InFlight() const override { return 0; }
  void CancelAll() override {}

  void Answer(int status, std::string body) {
    HttpResponse response;
    response.status = status;
    response.body = std::move(body);
    answers.push_back(response);
  }

  std::deque<Result<HttpResponse>> answers;
  std::vector<HttpRequest> requests;

 private:
  boost::asio::io_context& io_;
};

class DynamoDbClientTest : public ::testing::Test {
 protected:
  DynamoDbClientTest() : transport_(io_) {
    options_.endpoint = "https://dynamodb.eu-west-1.amazonaws.com/";
    options_.region = "eu-west-1";
    options_.table = "budgets";
    options_.credentials = {"AKIDTEST", "very-secret-key", "session-token"};
    options_.backoff = std::chrono::milliseconds(0);              // retries at once: no waiting
    options_.probe_every = std::chrono::milliseconds(3'600'000);  // no probe within a test
  }

  // A started client, up (its table ACTIVE).
  std::unique_ptr<DynamoDbClient> Started() {
    auto client = std::make_unique<DynamoDbClient>(io_, clock_, transport_, random_, options_);
    client->SetStateObserver([this](bool up, const std::string& why) {
      states_.push_back(up);
      reasons_.push_back(why);
    });
    transport_.Answer(200, R"({"Table":{"TableName":"budgets","TableStatus":"ACTIVE"}})");
    client->Start();
    io_.run_for(std::chrono::milliseconds(50));
    io_.restart();
    return client;
  }

  Result<json> Call(DynamoDbClient& client, const std::string& operation) {
    std::optional<Result<json>> answer;
    client.Call(operation, json{{"Key", {{"k", {{"S", "x"}}}}}},
                [&](Result<json> r) { answer = std::move(r); });
    for (int i = 0; i < 100 && !answer; ++i) {
      io_.run_for(std::chrono::milliseconds(5));
      io_.restart();
    }
    return answer.value_or(Status::TimedOut("no answer"));
  }

  boost::asio::io_context io_;
  FakeClock clock_;
  FakeRandom random_;
  ScriptedTransport transport_;
  DynamoDbOptions options_;
  std::vector<bool> states_;
  std::vector<std::string> reasons_;
};

// Verifies what goes out: a signed POST to the endpoint with the operation in X-Amz-Target, the
// table's name in the body, and the session token; the secret key itself never.
TEST_F(DynamoDbClientTest, SendsSignedRequests) {
  auto client = Started();
  ASSERT_TRUE(client->up());
  transport_.Answer(200, R"({"Item":{}})");
  ASSERT_TRUE(Call(*client, "GetItem").has_value());
  const HttpRequest& request = transport_.requests.back();
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.url, "https://dynamodb.eu-west-1.amazonaws.com/");
  std::string target, authorization, token;
  for (const HttpHeader& h : request.headers) {
    target = h.name == "X-Amz-Target" ? h.value : target;
    authorization = h.name == "Authorization" ? h.value : authorization;
    token = h.name == "X-Amz-Security-Token" ? h.value : token;
  }
  EXPECT_EQ(target, "DynamoDB_20120810.GetItem");
  EXPECT_TRUE(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/")) << authorization;
  EXPECT_NE(authorization.find("/eu-west-1/dynamodb/aws4_request"), std::string::npos);
  EXPECT_EQ(token, "session-token");
  EXPECT_EQ(json::parse(request.body)["TableName"], "budgets");
  for (const HttpHeader& h : request.headers) {
    EXPECT_EQ(h.value.find("very-secret-key"), std::string::npos) << h.name;
  }
}

// Verifies that throttling and 5xx answers are tried again (after the jittered backoff) and that
// the call succeeds when DynamoDB then answers; the client stays up.
TEST_F(DynamoDbClientTest, TriesThrottledAnswersAgain) {
  auto client = Started();
  const size_t before = transport_.requests.size();
  transport_.Answer(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"})");
  transport_.Answer(500, "not json");
  transport_.Answer(200, R"({"Item":{"k":{"S":"x"}}})");
  Result<json> answer = Call(*client, "GetItem");
  ASSERT_TRUE(answer.has_value()) << answer.error().message();
  EXPECT_EQ(transport_.requests.size(), before + 3);
  EXPECT_EQ(client->retried(), 2u);
  EXPECT_TRUE(client->up());
}

// Verifies that a write another region's write to the same item refused (a global table with
// multi-Region strong consistency: ReplicatedWriteConflictException, which AWS's SDKs retry) is
// tried again like a throttled one.
TEST_F(DynamoDbClientTest, TriesAReplicatedWriteConflictAgain) {
  auto client = Started();
  transport_.Answer(
      400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ReplicatedWriteConflictException"})");
  transport_.Answer(200, R"({})");
  Result<json> answer = Call(*client, "UpdateItem");
  ASSERT_TRUE(answer.has_value()) << answer.error().message();
  EXPECT_EQ(client->retried(), 1u);
}

// Verifies that a call throttled max_attempts times fails with kUnavailable and puts the client
// down (the store's outage mode applies) instead of waiting longer.
TEST_F(DynamoDbClientTest, ThrottledEveryTimeIsUnavailableAndDown) {
  auto client = Started();
  for (int i = 0; i < 3; ++i) {
    transport_.Answer(
        400,
        R"({"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"})");
  }
  Result<json> answer = Call(*client, "UpdateItem");
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().code(), Status::Code::kUnavailable);
  EXPECT_FALSE(client->up());
  ASSERT_FALSE(states_.empty());
  EXPECT_FALSE(states_.back());
}

// Verifies that refused credentials put the client down, with a reason that names the refusal
// and no credential.
TEST_F(DynamoDbClientTest, RefusedCredentialsPutTheClientDown) {
  auto client = Started();
  transport_.Answer(400, R"({"__type":"com.amazon.coral.service#ExpiredTokenException",)"
                         R"("message":"The security token included in the request is expired"})");
  Result<json> answer = Call(*client, "GetItem");
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().code(), Status::Code::kUnavailable);
  EXPECT_FALSE(client->up());
  ASSERT_FALSE(reasons_.empty());
  EXPECT_NE(reasons_.back().find("ExpiredTokenException"), std::string::npos);
  for (const std::string& reason : reasons_) {
    EXPECT_EQ(reason.find("very-secret-key"), std::string::npos);
    EXPECT_EQ(reason.find("session-token"), std::string::npos);
  }
}

// Verifies hostile answers: typed errors, never a crash or an exception out of the loop.
TEST_F(DynamoDbClientTest, HostileAnswersAreTypedErrors) {
  auto client = Started();
  transport_.Answer(200, "[1,2,3]");
  EXPECT_EQ(Call(*client, "GetItem").error().code(), Status::Code::kCorruption);
  transport_.Answer(400, R"({"__type":7,"message":{"a":1}})");
  EXPECT_EQ(Call(*client, "GetItem").error().code(), Status::Code::kInvalidArgument);
  transport_.Answer(400, R"({"__type":"x#ConditionalCheckFailedException"})");
  EXPECT_EQ(Call(*client, "UpdateItem").error().code(), Status::Code::kFailedPrecondition);
  // A table status of the wrong type while starting: not up, no exception.
  auto other = std::make_unique<DynamoDbClient>(io_, clock_, transport_, random_, options_);
  transport_.Answer(200, R"({"Table":{"TableStatus":5}})");  // Start's DescribeTable
  transport_.Answer(200, R"({"Table":{"TableStatus":5}})");  // the first poll, at once
  other->Start();
  for (int i = 0; i < 100 && !transport_.answers.empty(); ++i) {
    io_.poll();
    io_.restart();
  }
  io_.poll();
  EXPECT_TRUE(transport_.answers.empty());
  EXPECT_FALSE(other->up());
  EXPECT_EQ(DynamoNumber(json{{"t", {{"N", "12x"}}}}, "t", 0).error().code(),
            Status::Code::kCorruption);
  EXPECT_EQ(DynamoNumber(json{{"t", {{"S", "12"}}}}, "t", 0).error().code(),
            Status::Code::kCorruption);
  EXPECT_EQ(DynamoNumber(json{{"t", "12"}}, "t", 0).error().code(), Status::Code::kCorruption);
  EXPECT_EQ(*DynamoNumber(json::object(), "t", 9), 9);
}

}  // namespace
}  // namespace egress::adapters
