#include "adapters/discord_adapter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/idempotency_keys.h"
#include "adapters/rate_limit_headers.h"
#include "dispatcher/pacing/classify.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

using nlohmann::json;
using pacing::Classify;
using pacing::OutcomeClass;
using pacing::RateLimitScope;

class DiscordAdapterTest : public ::testing::Test {
 protected:
  AttemptReport Interpret(const Result<HttpResponse>& response,
                          const std::string& destination = "channels/1234") {
    return adapter_.Interpret(MakeDelivery("discord", destination, "{}"), response, kTestNow);
  }

  DiscordAdapter adapter_{TestEndpoints()};
};

// Verifies bot Create Message: URL, Bot token, payload plus a stable nonce and enforce_nonce.
TEST_F(DiscordAdapterTest, BuildsCreateMessageWithNonce) {
  storage::Delivery d = MakeDelivery("discord", "channels/1234", R"({"content":"hi","nonce":"x"})");
  Result<HttpRequest> r = adapter_.BuildRequest(d, TokenCredential("bot-t"), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->url, "https://discord.test/api/v10/channels/1234/messages");
  EXPECT_EQ(HeaderOf(*r, "Authorization"), "Bot bot-t");
  EXPECT_EQ(HeaderOf(*r, "Content-Type"), "application/json");
  json body = json::parse(r->body);
  EXPECT_EQ(body["content"], "hi");
  EXPECT_EQ(body["nonce"], DiscordNonce(d.id));
  EXPECT_LE(body["nonce"].get<std::string>().size(), 25u);
  EXPECT_EQ(body["enforce_nonce"], true);
  Result<HttpRequest> again =
      adapter_.BuildRequest(d, TokenCredential("bot-t"), kTestNow + std::chrono::hours(1));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->body, r->body);  // Every retry sends the same nonce.
}

// Verifies Execute Webhook: versioned URL with wait=true, payload as-is, no Authorization.
TEST_F(DiscordAdapterTest, BuildsWebhookExecute) {
  const std::string payload = R"({"content":"hi"})";
  Result<HttpRequest> r = adapter_.BuildRequest(
      MakeDelivery("discord", "webhooks/987/tok-EN_x", payload), Credential{}, kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->url, "https://discord.test/api/v10/webhooks/987/tok-EN_x?wait=true");
  EXPECT_EQ(r->body, payload);
  EXPECT_EQ(HeaderOf(*r, "Authorization"), "<absent>");
}

// Verifies destination parsing and build errors.
TEST_F(DiscordAdapterTest, RejectsWhatCannotBeSent) {
  for (const char* dest : {"", "1234", "channels/", "channels/12/34", "channels/1?x=1",
                           "webhooks/987", "webhooks/987/", "webhooks//tok", "guilds/1"}) {
    EXPECT_FALSE(ParseDiscordDestination(dest).has_value()) << dest;
    EXPECT_EQ(
        adapter_.BuildRequest(MakeDelivery("discord", dest, "{}"), TokenCredential("t"), kTestNow)
            .error()
            .code(),
        Status::Code::kInvalidArgument)
        << dest;
  }
  EXPECT_EQ(
      adapter_
          .BuildRequest(MakeDelivery("discord", "channels/1", "[]"), TokenCredential("t"), kTestNow)
          .error()
          .code(),
      Status::Code::kInvalidArgument);
  EXPECT_EQ(
      adapter_
          .BuildRequest(MakeDelivery("discord", "channels/1", "{}"), TokenCredential(""), kTestNow)
          .error()
          .code(),
      Status::Code::kFailedPrecondition);
}

// Verifies a 200: delivered, message id recorded, bucket headers folded into the observation.
TEST_F(DiscordAdapterTest, SuccessFoldsBucketHeaders) {
  AttemptReport r = Interpret(Response(200,
                                       {{"X-RateLimit-Limit", "5"},
                                        {"X-RateLimit-Remaining", "0"},
                                        {"X-RateLimit-Reset", "1767225602.300"},
                                        {"X-RateLimit-Reset-After", "0.8"},
                                        {"X-RateLimit-Bucket", "a06de45e"}},
                                       R"({"id":"1300000000000000001","content":"hi"})"));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDelivered);
  EXPECT_EQ(r.platform_ref, "1300000000000000001");
  EXPECT_EQ(r.observation.limit, 5);
  EXPECT_EQ(r.observation.remaining, 0);
  EXPECT_EQ(r.observation.reset_after, Millis(800));
  EXPECT_EQ(r.observation.bucket, "a06de45e");
  EXPECT_FALSE(r.observation.retry_after.has_value());
  EXPECT_EQ(r.attempt.rate_limit_headers.size(), 5u);
}

// Verifies a user-scope 429: the body's float retry_after wins over the integer header.
TEST_F(DiscordAdapterTest, BucketRateLimitPrefersBodyRetryAfter) {
  AttemptReport r = Interpret(
      Response(429,
               {{"X-RateLimit-Remaining", "0"},
                {"X-RateLimit-Reset-After", "64.57"},
                {"X-RateLimit-Scope", "user"},
                {"Retry-After", "65"}},
               R"({"message":"You are being rate limited.","retry_after":64.57,"global":false})"));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(r.outcome.retry_after, Millis(64'570));
  EXPECT_EQ(r.observation.retry_after, Millis(64'570));
  EXPECT_EQ(r.observation.scope, RateLimitScope::kUser);
  EXPECT_FALSE(r.observation.global);
  EXPECT_EQ(r.outcome.platform_error, "rate_limited");
}

// Verifies a global 429: observation.global set from the header and the body.
TEST_F(DiscordAdapterTest, GlobalRateLimit) {
  AttemptReport header_only = Interpret(Response(
      429, {{"X-RateLimit-Global", "true"}, {"X-RateLimit-Scope", "global"}, {"Retry-After", "2"}},
      "not json"));
  EXPECT_TRUE(header_only.observation.global);
  EXPECT_EQ(header_only.observation.scope, RateLimitScope::kGlobal);
  EXPECT_EQ(header_only.outcome.retry_after, Millis(2000));
  AttemptReport body_only =
      Interpret(Response(429, {}, R"({"message":"global","retry_after":0.25,"global":true})"));
  EXPECT_TRUE(body_only.observation.global);
  EXPECT_EQ(body_only.outcome.retry_after, Millis(250));
}

// Verifies a shared-scope 429 is throttled and flagged as shared (not an invalid request).
TEST_F(DiscordAdapterTest, SharedRateLimit) {
  AttemptReport r = Interpret(Response(
      429, {{"X-RateLimit-Scope", "shared"}, {"X-RateLimit-Remaining", "9"}},
      R"({"message":"The resource is being rate limited.","retry_after":30.0,"global":false,"code":40062})"));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(r.observation.scope, RateLimitScope::kShared);
  EXPECT_EQ(r.outcome.retry_after, Millis(30'000));
  EXPECT_EQ(r.outcome.platform_error, "40062");
}

// Verifies garbage retry_after values fall back to the header, or to nothing.
TEST_F(DiscordAdapterTest, GarbageRetryAfter) {
  for (const char* body : {R"({"retry_after":-1})", R"({"retry_after":"soon"})",
                           R"({"retry_after":1e400})", R"([1,2,3])", "\xff\xfe"}) {
    AttemptReport r = Interpret(Response(429, {{"Retry-After", "3"}}, body));
    EXPECT_EQ(r.outcome.retry_after, Millis(3000)) << body;
  }
  AttemptReport none = Interpret(Response(429, {}, R"({"retry_after":null})"));
  EXPECT_FALSE(none.outcome.retry_after.has_value());
  AttemptReport huge = Interpret(Response(429, {}, R"({"retry_after":1e12})"));
  EXPECT_EQ(huge.outcome.retry_after, kMaxRateLimitWait);
}

// Verifies 401: dead; a bot token is invalidated, a webhook (whose token is the destination's)
// is disabled instead.
TEST_F(DiscordAdapterTest, UnauthorizedInvalidatesCredential) {
  AttemptReport bot = Interpret(Response(401, {}, R"({"message":"401: Unauthorized","code":0})"));
  EXPECT_EQ(Classify(bot.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(bot.outcome.platform_error, "http_401");
  EXPECT_TRUE(bot.invalidate_credential.has_value());
  EXPECT_FALSE(bot.disable_destination.has_value());
  AttemptReport hook = Interpret(
      Response(401, {}, R"({"message":"Invalid Webhook Token","code":50027})"), "webhooks/9/t");
  EXPECT_EQ(hook.outcome.platform_error, "50027");
  EXPECT_FALSE(hook.invalidate_credential.has_value());
  EXPECT_TRUE(hook.disable_destination.has_value());
}

// Verifies 404 unknown webhook disables; other 4xx are dead with Discord's code; 5xx retry.
TEST_F(DiscordAdapterTest, ClientAndServerErrors) {
  AttemptReport unknown =
      Interpret(Response(404, {}, R"({"message":"Unknown Webhook","code":10015})"), "webhooks/9/t");
  EXPECT_EQ(Classify(unknown.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(unknown.outcome.platform_error, "10015");
  EXPECT_TRUE(unknown.disable_destination.has_value());
  AttemptReport channel =
      Interpret(Response(404, {}, R"({"message":"Unknown Channel","code":10003})"));
  EXPECT_EQ(channel.outcome.platform_error, "10003");
  EXPECT_FALSE(channel.disable_destination.has_value());
  EXPECT_EQ(channel.attempt.detail, "Unknown Channel");
  AttemptReport forbidden =
      Interpret(Response(403, {}, R"({"message":"Missing Permissions","code":50013})"));
  EXPECT_EQ(Classify(forbidden.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(forbidden.outcome.platform_error, "50013");
  EXPECT_FALSE(forbidden.invalidate_credential.has_value());
  AttemptReport bad = Interpret(Response(400, {}, "<html>"));
  EXPECT_EQ(bad.outcome.platform_error, "http_400");
  EXPECT_NE(bad.attempt.detail.find("unreadable"), std::string::npos);
  AttemptReport gateway = Interpret(Response(502, {}, ""));
  EXPECT_EQ(Classify(gateway.outcome), OutcomeClass::kRetry);
  AttemptReport reset = Interpret(Status::Unavailable("Connection reset by peer"));
  EXPECT_EQ(Classify(reset.outcome), OutcomeClass::kRetry);
}

}  // namespace
}  // namespace egress::adapters
