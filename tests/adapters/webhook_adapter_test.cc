#include "adapters/webhook_adapter.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "adapters/base64.h"
#include "adapters/webhook_signature.h"
#include "dispatcher/pacing/classify.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

using pacing::Classify;
using pacing::OutcomeClass;

std::string Secret(char fill) { return "whsec_" + Base64Encode(std::string(32, fill)); }

Credential Secrets(std::vector<std::string> secrets) {
  return Credential{
      .name = "hook", .platform = "webhook", .token = "", .secrets = std::move(secrets)};
}

WebhookSignatureHeaders SignatureOf(const HttpRequest& r) {
  return {HeaderOf(r, "webhook-id"), HeaderOf(r, "webhook-timestamp"),
          HeaderOf(r, "webhook-signature")};
}

class WebhookAdapterTest : public ::testing::Test {
 protected:
  AttemptReport Interpret(const Result<HttpResponse>& response) {
    return adapter_.Interpret(MakeDelivery("webhook", "https://example.test/hook", "{}"), response,
                              kTestNow);
  }

  WebhookAdapter adapter_{TestEndpoints()};
};

// Verifies the request: URL, exact body, JSON content type, SSRF policy, and Standard Webhooks
// headers that verify with the secret.
TEST_F(WebhookAdapterTest, BuildsSignedRequest) {
  const std::string payload = R"({"type":"invoice.paid", "n": 1})";
  storage::Delivery d = MakeDelivery("webhook", "https://example.test/hook", payload);
  Result<HttpRequest> r = adapter_.BuildRequest(d, Secrets({Secret('a')}), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->url, "https://example.test/hook");
  EXPECT_EQ(r->body, payload);
  EXPECT_EQ(HeaderOf(*r, "Content-Type"), "application/json");
  EXPECT_EQ(HeaderOf(*r, "webhook-id"), d.id);
  EXPECT_EQ(HeaderOf(*r, "webhook-timestamp"), "1767225601");
  ASSERT_TRUE(r->ssrf.has_value());
  EXPECT_FALSE(r->ssrf->allow_private_networks);
  WebhookKey key = *ParseWebhookSecret(Secret('a'));
  EXPECT_TRUE(VerifyWebhook({&key, 1}, SignatureOf(*r), payload, kTestNow).ok());
}

// Verifies retries: same webhook-id, fresh timestamp and signature per attempt.
TEST_F(WebhookAdapterTest, RetryKeepsIdAndRenewsTimestamp) {
  storage::Delivery d = MakeDelivery("webhook", "https://example.test/hook", "{}");
  Result<HttpRequest> first = adapter_.BuildRequest(d, Secrets({Secret('a')}), kTestNow);
  Result<HttpRequest> later =
      adapter_.BuildRequest(d, Secrets({Secret('a')}), kTestNow + std::chrono::minutes(10));
  ASSERT_TRUE(first.has_value() && later.has_value());
  EXPECT_EQ(HeaderOf(*first, "webhook-id"), HeaderOf(*later, "webhook-id"));
  EXPECT_EQ(HeaderOf(*later, "webhook-timestamp"), "1767226201");
  EXPECT_NE(HeaderOf(*first, "webhook-signature"), HeaderOf(*later, "webhook-signature"));
}

// Verifies rotation: one signature per secret, each verifying with its own key alone.
TEST_F(WebhookAdapterTest, SignsWithEverySecretDuringRotation) {
  storage::Delivery d = MakeDelivery("webhook", "https://example.test/hook", "{}");
  Result<HttpRequest> r = adapter_.BuildRequest(d, Secrets({Secret('n'), Secret('o')}), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const std::string sig = HeaderOf(*r, "webhook-signature");
  EXPECT_EQ(std::count(sig.begin(), sig.end(), ' '), 1);
  for (char fill : {'n', 'o'}) {
    WebhookKey key = *ParseWebhookSecret(Secret(fill));
    EXPECT_TRUE(VerifyWebhook({&key, 1}, SignatureOf(*r), "{}", kTestNow).ok()) << fill;
  }
}

// Verifies build errors: bad URL or payload are the delivery's fault; bad secrets the credential's.
TEST_F(WebhookAdapterTest, RejectsWhatCannotBeSent) {
  auto build = [&](std::string dest, std::string payload, Credential c) {
    return adapter_.BuildRequest(MakeDelivery("webhook", dest, payload), c, kTestNow).status();
  };
  const Credential good = Secrets({Secret('a')});
  EXPECT_EQ(build("example.test/hook", "{}", good).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(build("file:///etc/passwd", "{}", good).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(build("https://example.test", "{nope", good).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(build("https://example.test", "{}", Secrets({})).code(),
            Status::Code::kFailedPrecondition);
  Status bad_secret = build("https://example.test", "{}", Secrets({Secret('a'), "whsec_!!"}));
  EXPECT_EQ(bad_secret.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(bad_secret.message().find("#2"), std::string::npos);
  storage::Delivery dotted = MakeDelivery("webhook", "https://example.test", "{}");
  dotted.id = "a.b";
  EXPECT_EQ(adapter_.BuildRequest(dotted, good, kTestNow).error().code(),
            Status::Code::kInvalidArgument);
}

// Verifies the status table: 2xx, 410, 429/502/503/504, other 5xx, 3xx and 4xx.
TEST_F(WebhookAdapterTest, ClassifiesStatuses) {
  struct Case {
    int status;
    OutcomeClass want;
  };
  const Case cases[] = {
      {200, OutcomeClass::kDelivered},       {204, OutcomeClass::kDelivered},
      {301, OutcomeClass::kDeadLetter},      {302, OutcomeClass::kDeadLetter},
      {400, OutcomeClass::kDeadLetter},      {404, OutcomeClass::kDeadLetter},
      {410, OutcomeClass::kDeadLetter},      {429, OutcomeClass::kBudgetExhausted},
      {500, OutcomeClass::kRetry},           {501, OutcomeClass::kRetry},
      {502, OutcomeClass::kBudgetExhausted}, {503, OutcomeClass::kBudgetExhausted},
      {504, OutcomeClass::kBudgetExhausted},
  };
  for (const Case& c : cases) {
    AttemptReport r = Interpret(Response(c.status, {}, "body"));
    EXPECT_EQ(Classify(r.outcome), c.want) << c.status;
    EXPECT_EQ(r.disable_destination.has_value(), c.status == 410) << c.status;
    if (c.status >= 300) {
      EXPECT_EQ(r.outcome.platform_error, "http_" + std::to_string(c.status));
    }
  }
}

// Verifies Retry-After is honoured on throttles, as a delay or an HTTP-date.
TEST_F(WebhookAdapterTest, HonoursRetryAfter) {
  AttemptReport delay = Interpret(Response(503, {{"Retry-After", "120"}}, ""));
  EXPECT_EQ(delay.outcome.retry_after, Millis(120'000));
  EXPECT_EQ(delay.observation.retry_after, Millis(120'000));
  AttemptReport date =
      Interpret(Response(429, {{"Retry-After", "Thu, 01 Jan 2026 00:00:31 GMT"}}, ""));
  EXPECT_EQ(date.outcome.retry_after, Millis(29'500));
  AttemptReport none = Interpret(Response(502, {}, ""));
  EXPECT_FALSE(none.outcome.retry_after.has_value());
  AttemptReport server = Interpret(Response(500, {{"Retry-After", "7"}}, ""));
  EXPECT_EQ(Classify(server.outcome), OutcomeClass::kRetry);
  EXPECT_EQ(server.outcome.retry_after, Millis(7000));
}

// Verifies Svix's abort-message header stops retries, and transport errors map as they should.
TEST_F(WebhookAdapterTest, AbortMessageAndTransportErrors) {
  AttemptReport abort = Interpret(Response(503, {{"Webhook-Delivery", "Abort-Message"}}, ""));
  EXPECT_EQ(Classify(abort.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(abort.outcome.platform_error, "abort_message");
  AttemptReport ok = Interpret(Response(200, {{"webhook-delivery", "abort-message"}}, ""));
  EXPECT_EQ(Classify(ok.outcome), OutcomeClass::kDelivered);
  AttemptReport ssrf = Interpret(Status::Rejected("destination_not_allowed: private address"));
  EXPECT_EQ(Classify(ssrf.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(ssrf.outcome.platform_error, "destination_not_allowed");
  EXPECT_EQ(Classify(Interpret(Status::TimedOut("t")).outcome), OutcomeClass::kRetry);
  EXPECT_EQ(Classify(Interpret(Status::Unavailable("refused")).outcome), OutcomeClass::kRetry);
}

}  // namespace
}  // namespace egress::adapters
