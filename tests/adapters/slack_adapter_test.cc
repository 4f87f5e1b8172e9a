#include "adapters/slack_adapter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dispatcher/pacing/classify.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

using nlohmann::json;
using pacing::Classify;
using pacing::OutcomeClass;

class SlackAdapterTest : public ::testing::Test {
 protected:
  AttemptReport Interpret(const Result<HttpResponse>& response,
                          const std::string& destination = "C0123") {
    return adapter_.Interpret(MakeDelivery("slack", destination, "{}"), response, kTestNow);
  }

  SlackAdapter adapter_{TestEndpoints()};
};

// Verifies chat.postMessage: URL, bearer token, JSON body with channel set from the destination.
TEST_F(SlackAdapterTest, BuildsPostMessage) {
  Result<HttpRequest> r =
      adapter_.BuildRequest(MakeDelivery("slack", "C0123", R"({"text":"hi","channel":"ignored"})"),
                            TokenCredential("xoxb-1"), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->method, "POST");
  EXPECT_EQ(r->url, "https://slack.test/api/chat.postMessage");
  EXPECT_EQ(HeaderOf(*r, "Authorization"), "Bearer xoxb-1");
  EXPECT_EQ(HeaderOf(*r, "Content-Type"), "application/json; charset=utf-8");
  EXPECT_EQ(json::parse(r->body), json::parse(R"({"text":"hi","channel":"C0123"})"));
  EXPECT_FALSE(r->ssrf.has_value());
}

// Verifies incoming webhooks: posted as-is to the URL, no token, SSRF-guarded unless the URL is
// under the operator's base URL.
TEST_F(SlackAdapterTest, BuildsIncomingWebhook) {
  const std::string payload = R"({"text":"hi"})";
  Result<HttpRequest> r = adapter_.BuildRequest(
      MakeDelivery("slack", "https://hooks.slack.com/services/T1/B2/x3", payload), Credential{},
      kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->url, "https://hooks.slack.com/services/T1/B2/x3");
  EXPECT_EQ(r->body, payload);
  EXPECT_EQ(HeaderOf(*r, "Authorization"), "<absent>");
  ASSERT_TRUE(r->ssrf.has_value());
  EXPECT_FALSE(r->ssrf->allow_private_networks);

  PlatformEndpoints local = TestEndpoints();
  local.slack_base_url = "http://127.0.0.1:9000";
  SlackAdapter sim(local);
  Result<HttpRequest> s =
      sim.BuildRequest(MakeDelivery("slack", "http://127.0.0.1:9000/services/T1/B2/x3", payload),
                       Credential{}, kTestNow);
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_FALSE(s->ssrf.has_value());
  EXPECT_FALSE(sim.IsIncomingWebhook("http://127.0.0.2:9000/services/T1"));
  EXPECT_FALSE(sim.IsIncomingWebhook("http://127.0.0.1:90001/x"));
}

// Verifies the build errors: malformed destination or payload, missing token.
TEST_F(SlackAdapterTest, RejectsWhatCannotBeSent) {
  auto build = [&](std::string dest, std::string payload, std::string token) {
    return adapter_.BuildRequest(MakeDelivery("slack", dest, payload), TokenCredential(token),
                                 kTestNow);
  };
  EXPECT_EQ(build("", "{}", "t").error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(build("C 1", "{}", "t").error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(build("http://evil.test/x", "{}", "t").error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(build("C1", "not json", "t").error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(build("C1", "[1,2]", "t").error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(build("C1", "{}", "").error().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(build("https://hooks.slack.com/services/x", "oops", "").error().code(),
            Status::Code::kInvalidArgument);
}

// Verifies ok:true: delivered with the message ts recorded.
TEST_F(SlackAdapterTest, OkRecordsTs) {
  AttemptReport r =
      Interpret(Response(200, {}, R"({"ok":true,"channel":"C0123","ts":"1.000200"})"));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDelivered);
  EXPECT_EQ(r.platform_ref, "1.000200");
}

// Verifies both throttle forms: 429 + Retry-After and HTTP 200 ok:false rate_limited.
TEST_F(SlackAdapterTest, ThrottlesOn429AndBodyCodes) {
  AttemptReport r =
      Interpret(Response(429, {{"Retry-After", "30"}}, R"({"ok":false,"error":"ratelimited"})"));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(r.outcome.retry_after, Millis(30'000));
  EXPECT_EQ(r.observation.retry_after, Millis(30'000));
  EXPECT_EQ(r.outcome.platform_error, "ratelimited");
  EXPECT_EQ(r.attempt.rate_limit_headers.size(), 1u);

  AttemptReport bare = Interpret(Response(429, {}, ""));
  EXPECT_EQ(Classify(bare.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_FALSE(bare.outcome.retry_after.has_value());

  for (const char* code : {"ratelimited", "rate_limited"}) {
    AttemptReport body =
        Interpret(Response(200, {}, std::string(R"({"ok":false,"error":")") + code + "\"}"));
    EXPECT_TRUE(body.outcome.throttled) << code;
    EXPECT_EQ(Classify(body.outcome), OutcomeClass::kBudgetExhausted) << code;
    EXPECT_EQ(body.outcome.platform_error, code);
    EXPECT_FALSE(body.outcome.retry_after.has_value());
  }
}

// Verifies auth errors: dead with Slack's code and the credential invalidated.
TEST_F(SlackAdapterTest, AuthErrorsInvalidateCredential) {
  for (const char* code :
       {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "missing_scope"}) {
    AttemptReport r =
        Interpret(Response(200, {}, std::string(R"({"ok":false,"error":")") + code + "\"}"));
    EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDeadLetter) << code;
    EXPECT_EQ(r.outcome.platform_error, code);
    ASSERT_TRUE(r.invalidate_credential.has_value()) << code;
    EXPECT_NE(r.invalidate_credential->find(code), std::string::npos);
    EXPECT_FALSE(r.disable_destination.has_value());
  }
}

// Verifies channel and message errors: dead with Slack's code; archived also disables.
TEST_F(SlackAdapterTest, ChannelErrorsAreDead) {
  for (const char* code :
       {"channel_not_found", "not_in_channel", "msg_too_long", "no_text", "invalid_blocks"}) {
    AttemptReport r =
        Interpret(Response(200, {}, std::string(R"({"ok":false,"error":")") + code + "\"}"));
    EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDeadLetter) << code;
    EXPECT_EQ(r.attempt.platform_error, code);
    EXPECT_FALSE(r.disable_destination.has_value()) << code;
    EXPECT_FALSE(r.invalidate_credential.has_value()) << code;
  }
  for (const char* code : {"is_archived", "channel_is_archived"}) {
    AttemptReport r =
        Interpret(Response(200, {}, std::string(R"({"ok":false,"error":")") + code + "\"}"));
    EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDeadLetter) << code;
    EXPECT_TRUE(r.disable_destination.has_value()) << code;
  }
}

// Verifies transient body errors and 5xx: retried, the real status kept in the attempt.
TEST_F(SlackAdapterTest, TransientErrorsRetry) {
  AttemptReport r = Interpret(Response(200, {}, R"({"ok":false,"error":"service_unavailable"})"));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kRetry);
  EXPECT_EQ(r.attempt.http_status, 200);
  EXPECT_EQ(r.outcome.platform_error, "service_unavailable");
  AttemptReport internal = Interpret(Response(200, {}, R"({"ok":false,"error":"internal_error"})"));
  EXPECT_EQ(Classify(internal.outcome), OutcomeClass::kRetry);
  EXPECT_NE(internal.attempt.detail.find("may have been posted"), std::string::npos);
  AttemptReport gateway = Interpret(Response(502, {}, "<html>bad gateway</html>"));
  EXPECT_EQ(Classify(gateway.outcome), OutcomeClass::kRetry);
  EXPECT_EQ(gateway.outcome.platform_error, "http_502");
  AttemptReport timeout = Interpret(Status::TimedOut("slow"));
  EXPECT_EQ(Classify(timeout.outcome), OutcomeClass::kRetry);
}

// Verifies garbage: unreadable 2xx bodies are delivered with a detail, garbage 4xx are dead
// with http_<status>, and nothing throws.
TEST_F(SlackAdapterTest, GarbageBodies) {
  AttemptReport r = Interpret(Response(200, {}, std::string("\x00\xff{{", 4)));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDelivered);
  EXPECT_NE(r.attempt.detail.find("unreadable"), std::string::npos);
  EXPECT_TRUE(r.platform_ref.empty());
  AttemptReport weird = Interpret(Response(200, {}, R"({"ok":false,"error":42})"));
  EXPECT_EQ(Classify(weird.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(weird.outcome.platform_error, "unknown_error");
  EXPECT_FALSE(weird.attempt.detail.empty());
  AttemptReport bad = Interpret(Response(400, {}, "<<garbage>>"));
  EXPECT_EQ(Classify(bad.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(bad.outcome.platform_error, "http_400");
  AttemptReport long_code =
      Interpret(Response(200, {}, R"({"ok":false,"error":")" + std::string(500, 'x') + "\"}"));
  EXPECT_LE(long_code.outcome.platform_error.size(), 64u);
}

// Verifies incoming-webhook responses: plain-text codes, 410 and removed hooks disable.
TEST_F(SlackAdapterTest, InterpretsIncomingWebhookResponses) {
  const std::string hook = "https://hooks.slack.com/services/T1/B2/x3";
  EXPECT_EQ(Classify(Interpret(Response(200, {}, "ok"), hook).outcome), OutcomeClass::kDelivered);
  AttemptReport limited = Interpret(Response(429, {{"Retry-After", "1"}}, "rate limited"), hook);
  EXPECT_EQ(Classify(limited.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(limited.outcome.retry_after, Millis(1000));
  AttemptReport archived = Interpret(Response(410, {}, "channel_is_archived"), hook);
  EXPECT_EQ(Classify(archived.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(archived.outcome.platform_error, "channel_is_archived");
  EXPECT_TRUE(archived.disable_destination.has_value());
  AttemptReport removed = Interpret(Response(404, {}, "no_service\n"), hook);
  EXPECT_EQ(removed.outcome.platform_error, "no_service");
  EXPECT_TRUE(removed.disable_destination.has_value());
  AttemptReport invalid = Interpret(Response(400, {}, "invalid_payload"), hook);
  EXPECT_EQ(Classify(invalid.outcome), OutcomeClass::kDeadLetter);
  EXPECT_FALSE(invalid.disable_destination.has_value());
  AttemptReport html = Interpret(Response(403, {}, "<html>Forbidden</html>"), hook);
  EXPECT_EQ(html.outcome.platform_error, "http_403");
  EXPECT_EQ(Classify(Interpret(Response(500, {}, "x"), hook).outcome), OutcomeClass::kRetry);
}

}  // namespace
}  // namespace egress::adapters
