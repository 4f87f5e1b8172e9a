#include "adapters/line_adapter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/idempotency_keys.h"
#include "dispatcher/pacing/classify.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

using nlohmann::json;
using pacing::Classify;
using pacing::OutcomeClass;

constexpr char kMessages[] = R"({"messages":[{"type":"text","text":"hi"}]})";

std::string MulticastPayload(size_t recipients) {
  json p = json::parse(kMessages);
  p["to"] = json::array();
  for (size_t i = 0; i < recipients; ++i) {
    p["to"].push_back("U" + std::to_string(i));
  }
  return p.dump();
}

class LineAdapterTest : public ::testing::Test {
 protected:
  AttemptReport Interpret(const Result<HttpResponse>& response, WallTime at = kTestNow) {
    return adapter_.Interpret(MakeDelivery("line", "U1", kMessages), response, at);
  }

  LineAdapter adapter_{TestEndpoints()};
};

// Verifies push: URL, bearer token, "to" from the destination and a stable retry key.
TEST_F(LineAdapterTest, BuildsPushWithRetryKey) {
  storage::Delivery d = MakeDelivery("line", "Uabc123", kMessages);
  Result<HttpRequest> r = adapter_.BuildRequest(d, TokenCredential("line-t"), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->url, "https://line.test/v2/bot/message/push");
  EXPECT_EQ(HeaderOf(*r, "Authorization"), "Bearer line-t");
  EXPECT_EQ(HeaderOf(*r, "X-Line-Retry-Key"), LineRetryKey(d.id));
  json body = json::parse(r->body);
  EXPECT_EQ(body["to"], "Uabc123");
  EXPECT_EQ(body["messages"][0]["text"], "hi");
  Result<HttpRequest> retry =
      adapter_.BuildRequest(d, TokenCredential("line-t"), kTestNow + std::chrono::minutes(5));
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(HeaderOf(*retry, "X-Line-Retry-Key"), HeaderOf(*r, "X-Line-Retry-Key"));
}

// Verifies multicast: up to 500 recipients go as-is to /multicast; more is refused.
TEST_F(LineAdapterTest, BuildsMulticastUpTo500) {
  const std::string payload = MulticastPayload(500);
  Result<HttpRequest> r = adapter_.BuildRequest(MakeDelivery("line", "batch-7", payload),
                                                TokenCredential("t"), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->url, "https://line.test/v2/bot/message/multicast");
  EXPECT_EQ(r->body, payload);
  Result<HttpRequest> big = adapter_.BuildRequest(
      MakeDelivery("line", "batch-7", MulticastPayload(501)), TokenCredential("t"), kTestNow);
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(big.error().message().find("SplitLineMulticast"), std::string::npos);
  EXPECT_FALSE(adapter_
                   .BuildRequest(MakeDelivery("line", "b", R"({"to":[],"messages":[]})"),
                                 TokenCredential("t"), kTestNow)
                   .has_value());
  EXPECT_FALSE(adapter_
                   .BuildRequest(MakeDelivery("line", "b", R"({"to":["U1",7],"messages":[]})"),
                                 TokenCredential("t"), kTestNow)
                   .has_value());
}

// Verifies the intake helper splits at 500 recipients, in order, copying other fields.
TEST_F(LineAdapterTest, SplitsMulticast) {
  Result<std::vector<std::string>> parts = SplitLineMulticast(MulticastPayload(1201));
  ASSERT_TRUE(parts.has_value()) << parts.error().ToString();
  ASSERT_EQ(parts->size(), 3u);
  size_t next = 0;
  for (const std::string& part : *parts) {
    json p = json::parse(part);
    EXPECT_EQ(p["messages"][0]["text"], "hi");
    for (const json& id : p["to"]) {
      EXPECT_EQ(id, "U" + std::to_string(next++));
    }
  }
  EXPECT_EQ(next, 1201u);
  EXPECT_EQ(json::parse((*parts)[2])["to"].size(), 201u);
  Result<std::vector<std::string>> push = SplitLineMulticast(kMessages);
  ASSERT_TRUE(push.has_value());
  EXPECT_EQ(*push, std::vector<std::string>{kMessages});
  EXPECT_FALSE(SplitLineMulticast("nope").has_value());
  EXPECT_FALSE(SplitLineMulticast(R"({"to":[]})").has_value());
  EXPECT_FALSE(SplitLineMulticast(MulticastPayload(3), 0).has_value());
}

// Verifies build errors: missing id, bad destination or payload, missing token.
TEST_F(LineAdapterTest, RejectsWhatCannotBeSent) {
  storage::Delivery no_id = MakeDelivery("line", "U1", kMessages);
  no_id.id.clear();
  EXPECT_EQ(adapter_.BuildRequest(no_id, TokenCredential("t"), kTestNow).error().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(
      adapter_.BuildRequest(MakeDelivery("line", "", kMessages), TokenCredential("t"), kTestNow)
          .error()
          .code(),
      Status::Code::kInvalidArgument);
  EXPECT_EQ(adapter_.BuildRequest(MakeDelivery("line", "U1", "{"), TokenCredential("t"), kTestNow)
                .error()
                .code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(
      adapter_.BuildRequest(MakeDelivery("line", "U1", kMessages), TokenCredential(""), kTestNow)
          .error()
          .code(),
      Status::Code::kFailedPrecondition);
}

// Verifies 200 records the request id and 409 with an accepted id counts as delivered.
TEST_F(LineAdapterTest, SuccessAndAcceptedRetryKey) {
  AttemptReport ok =
      Interpret(Response(200, {{"X-Line-Request-Id", "req-1"}}, R"({"sentMessages":[]})"));
  EXPECT_EQ(Classify(ok.outcome), OutcomeClass::kDelivered);
  EXPECT_EQ(ok.platform_ref, "req-1");
  AttemptReport dup = Interpret(Response(
      409, {{"x-line-request-id", "req-2"}, {"x-line-accepted-request-id", "req-1"}},
      R"({"message":"The retry key is already accepted","sentMessages":[{"id":"1","quoteToken":"q"}]})"));
  EXPECT_TRUE(dup.outcome.accepted);
  EXPECT_EQ(Classify(dup.outcome), OutcomeClass::kDelivered);
  EXPECT_EQ(dup.platform_ref, "req-1");
  EXPECT_EQ(dup.attempt.rate_limit_headers.size(), 2u);
  AttemptReport conflict = Interpret(Response(409, {}, R"({"message":"Conflict"})"));
  EXPECT_EQ(Classify(conflict.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(conflict.outcome.platform_error, "http_409");
}

// Verifies the monthly-limit 429 waits until the first of next month (UTC).
TEST_F(LineAdapterTest, MonthlyLimitWaitsForNextMonth) {
  const WallTime at = FromUnixMillis(1'771'070'400'000);  // 2026-02-14T12:00:00Z
  AttemptReport r =
      Interpret(Response(429, {}, R"({"message":"You have reached your monthly limit."})"), at);
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(r.outcome.platform_error, "monthly_limit");
  const Millis want = Millis(1'772'323'200'000 - 1'771'070'400'000);  // to 2026-03-01T00:00Z
  EXPECT_EQ(r.outcome.retry_after, want);
  EXPECT_EQ(r.observation.retry_after, want);
  EXPECT_EQ(UntilNextMonthUtc(FromUnixMillis(1'798'761'599'000)), Millis(1000));  // Dec 31 23:59:59
}

// Verifies other 429s are throttled without a wait (the pacing engine backs off adaptively).
TEST_F(LineAdapterTest, RateLimit429HasNoWait) {
  AttemptReport r = Interpret(Response(429, {}, R"({"message":"Too Many Requests"})"));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(r.outcome.platform_error, "rate_limited");
  EXPECT_FALSE(r.outcome.retry_after.has_value());
  EXPECT_FALSE(r.observation.retry_after.has_value());
  EXPECT_EQ(r.attempt.detail, "Too Many Requests");
  AttemptReport garbage = Interpret(Response(429, {}, "\x01\x02"));
  EXPECT_EQ(Classify(garbage.outcome), OutcomeClass::kBudgetExhausted);
}

// Verifies 401 invalidates the token, other 4xx are dead, 5xx and timeouts retry.
TEST_F(LineAdapterTest, ErrorStatuses) {
  AttemptReport unauthorized =
      Interpret(Response(401, {}, R"({"message":"Authentication failed"})"));
  EXPECT_EQ(Classify(unauthorized.outcome), OutcomeClass::kDeadLetter);
  EXPECT_TRUE(unauthorized.invalidate_credential.has_value());
  AttemptReport bad = Interpret(Response(
      400, {}, R"j({"message":"The request body has 1 error(s)","details":[{"message":"x"}]})j"));
  EXPECT_EQ(Classify(bad.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(bad.outcome.platform_error, "http_400");
  EXPECT_EQ(bad.attempt.detail, "The request body has 1 error(s)");
  EXPECT_EQ(Classify(Interpret(Response(500, {}, "")).outcome), OutcomeClass::kRetry);
  EXPECT_EQ(Classify(Interpret(Status::TimedOut("t")).outcome), OutcomeClass::kRetry);
}

}  // namespace
}  // namespace egress::adapters
