#include "adapters/request_timeouts.h"

#include <gtest/gtest.h>

#include "adapters/adapter_registry.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

PlatformTimeouts DistinctTimeouts() {
  PlatformTimeouts timeouts;
  timeouts[static_cast<size_t>(Platform::kSlack)] = {.connect = Millis(101), .total = Millis(1001)};
  timeouts[static_cast<size_t>(Platform::kLine)] = {.connect = Millis(303), .total = Millis(3003)};
  return timeouts;
}

// Verifies each platform's requests carry that platform's timeouts, and the defaults elsewhere.
TEST(RequestTimeoutsTest, StampsEachPlatformsTimeouts) {
  AdapterRegistry registry(TestEndpoints());
  TimedAdapters adapters(registry, DistinctTimeouts());
  Result<HttpRequest> slack = (*adapters.Find("slack"))
                                  ->BuildRequest(MakeDelivery("slack", "C0123", R"({"text":"hi"})"),
                                                 TokenCredential("xoxb-1"), kTestNow);
  ASSERT_TRUE(slack.has_value()) << slack.error().ToString();
  EXPECT_EQ(slack->connect_timeout, Millis(101));
  EXPECT_EQ(slack->timeout, Millis(1001));
  Result<HttpRequest> line = (*adapters.Find("line"))
                                 ->BuildRequest(MakeDelivery("line", "U1", R"({"messages":[]})"),
                                                TokenCredential("t"), kTestNow);
  ASSERT_TRUE(line.has_value()) << line.error().ToString();
  EXPECT_EQ(line->connect_timeout, Millis(303));
  EXPECT_EQ(line->timeout, Millis(3003));
  EXPECT_EQ(line->url, "https://line.test/v2/bot/message/push");  // the inner adapter's request
  Result<HttpRequest> discord =
      (*adapters.Find("discord"))
          ->BuildRequest(MakeDelivery("discord", "channels/1", R"({"content":"hi"})"),
                         TokenCredential("bot"), kTestNow);
  ASSERT_TRUE(discord.has_value()) << discord.error().ToString();
  EXPECT_EQ(discord->connect_timeout, Millis(5'000));
  EXPECT_EQ(discord->timeout, Millis(15'000));
}

// Verifies each platform's requests carry that platform's own trust (and others none), and every
// request its credential's client certificate, only that credential's.
TEST(RequestTimeoutsTest, StampsEachPlatformsTrustAndTheCredentialsCertificate) {
  AdapterRegistry registry(TestEndpoints());
  PlatformTrust trust;
  trust[static_cast<size_t>(Platform::kSlack)] = {.ca_file = "/ca/slack.pem"};
  trust[static_cast<size_t>(Platform::kLine)] = {.ca_path = "/ca/line"};
  TimedAdapters adapters(registry, DistinctTimeouts(), trust);
  Credential with = TokenCredential("xoxb-1");
  with.client_cert_file = "/certs/a.pem";
  with.client_key_file = "/certs/a.key";
  const storage::Delivery slack_delivery = MakeDelivery("slack", "C0123", R"({"text":"hi"})");
  Result<HttpRequest> slack =
      (*adapters.Find("slack"))->BuildRequest(slack_delivery, with, kTestNow);
  ASSERT_TRUE(slack.has_value()) << slack.error().ToString();
  EXPECT_EQ(slack->ca_file, "/ca/slack.pem");
  EXPECT_EQ(slack->ca_path, "");
  EXPECT_EQ(slack->client_cert_file, "/certs/a.pem");
  EXPECT_EQ(slack->client_key_file, "/certs/a.key");
  Result<HttpRequest> without =
      (*adapters.Find("slack"))->BuildRequest(slack_delivery, TokenCredential("xoxb-2"), kTestNow);
  ASSERT_TRUE(without.has_value()) << without.error().ToString();
  EXPECT_EQ(without->client_cert_file, "");
  EXPECT_EQ(without->client_key_file, "");
  Result<HttpRequest> line = (*adapters.Find("line"))
                                 ->BuildRequest(MakeDelivery("line", "U1", R"({"messages":[]})"),
                                                TokenCredential("t"), kTestNow);
  ASSERT_TRUE(line.has_value()) << line.error().ToString();
  EXPECT_EQ(line->ca_file, "");
  EXPECT_EQ(line->ca_path, "/ca/line");
  Result<HttpRequest> discord =
      (*adapters.Find("discord"))
          ->BuildRequest(MakeDelivery("discord", "channels/1", R"({"content":"hi"})"),
                         TokenCredential("bot"), kTestNow);
  ASSERT_TRUE(discord.has_value()) << discord.error().ToString();
  EXPECT_EQ(discord->ca_file, "");
  EXPECT_EQ(discord->ca_path, "");
}

// Verifies a request the inner adapter refuses stays refused, and unknown platforms are named.
TEST(RequestTimeoutsTest, PassesErrorsThrough) {
  AdapterRegistry registry(TestEndpoints());
  TimedAdapters adapters(registry, DistinctTimeouts());
  Result<HttpRequest> bad = (*adapters.Find("slack"))
                                ->BuildRequest(MakeDelivery("slack", "C0123", "not json"),
                                               TokenCredential("xoxb-1"), kTestNow);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Status::Code::kInvalidArgument);
  Result<const PlatformAdapter*> unknown = adapters.Find("teams");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error(), registry.Find("teams").error());
  EXPECT_FALSE(adapters.Find("Slack").has_value());
}

// Verifies Interpret is the inner adapter's: the same report for the same response.
TEST(RequestTimeoutsTest, InterpretsLikeTheInnerAdapter) {
  AdapterRegistry registry(TestEndpoints());
  TimedAdapters adapters(registry, DistinctTimeouts());
  const storage::Delivery d = MakeDelivery("slack", "C0123", R"({"text":"hi"})");
  const Result<HttpResponse> response =
      Response(429, {{"Retry-After", "7"}}, R"({"ok":false,"error":"ratelimited"})");
  const AttemptReport timed = (*adapters.Find("slack"))->Interpret(d, response, kTestNow);
  const AttemptReport plain = (*registry.Find("slack"))->Interpret(d, response, kTestNow);
  EXPECT_EQ(timed.attempt, plain.attempt);
  EXPECT_TRUE(timed.outcome.throttled);
  EXPECT_EQ(timed.outcome.throttled, plain.outcome.throttled);
  EXPECT_EQ(timed.outcome.retry_after, plain.outcome.retry_after);
  EXPECT_EQ(timed.outcome.platform_error, plain.outcome.platform_error);
}

}  // namespace
}  // namespace egress::adapters
