// The four adapters through CurlTransport against the real relay-egress-sim on 127.0.0.1:
// requests the simulator accepts, its 429s read into the right observation, LINE's retry key
// across a timeout, Standard Webhooks signatures (also during a rotation) and 410. Each test runs
// over plain HTTP, HTTPS with HTTP/1.1 and HTTPS with HTTP/2 (the simulator's per-run CA as the
// transport's ca_file), and checks that every request used that protocol.

#include <cstdlib>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/adapter_registry.h"
#include "adapters/base64.h"
#include "adapters/curl_transport.h"
#include "dispatcher/pacing/classify.h"
#include "tests/support/sim_process.h"

namespace egress::adapters {
namespace {

using nlohmann::json;
using pacing::Classify;
using pacing::OutcomeClass;
using pacing::RateLimitScope;

std::string Secret(char fill) { return "whsec_" + Base64Encode(std::string(32, fill)); }

class AdaptersSimTest : public ::testing::TestWithParam<SimWire> {
 protected:
  void SetUp() override {
    Status started = sim_.Start(GetParam());
    ASSERT_TRUE(started.ok()) << started.ToString();
    base_ = sim_.BaseUrl();
    transport_ = NewCurlTransport(io_, clock_, TransportOptions{.ca_file = sim_.ca_file()});
    PlatformEndpoints endpoints;
    endpoints.slack_base_url = base_;
    endpoints.discord_base_url = base_;
    endpoints.line_base_url = base_;
    endpoints.webhook_ssrf.allow_private_networks = true;  // The simulator is on loopback.
    registry_ = std::make_unique<AdapterRegistry>(endpoints);
  }

  // Every test also verifies that all its platform requests arrived over the wire under test.
  void TearDown() override {
    if (transport_ == nullptr) {
      return;
    }
    Result<HttpResponse> r = Send({.method = "GET", .url = base_ + "/_sim/stats"});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    json stats = json::parse(r->body, nullptr, false);
    if (!stats.is_object() || !stats["totals"]["requests"].is_number_integer()) {
      ADD_FAILURE() << "no stats from the simulator: " << stats.dump();
      return;
    }
    const int64_t requests = stats["totals"]["requests"].get<int64_t>();
    EXPECT_GT(requests, 0);
    for (SimWire wire : {SimWire::kHttp, SimWire::kHttps1, SimWire::kHttps2}) {
      EXPECT_EQ(stats["protocols"][SimProtocolKey(wire)], wire == GetParam() ? requests : 0)
          << SimProtocolKey(wire) << " " << stats["protocols"].dump();
    }
  }

  Result<HttpResponse> Send(HttpRequest request) {
    Result<HttpResponse> out = Status::Unavailable("not completed");
    transport_->Send(std::move(request), [&](Result<HttpResponse> r) {
      out = std::move(r);
      io_.stop();
    });
    io_.restart();
    io_.run();
    return out;
  }

  // Builds, sends and interprets one attempt of `delivery`.
  AttemptReport Attempt(const storage::Delivery& delivery, const Credential& credential,
                        Millis timeout = Millis(5000)) {
    const PlatformAdapter* adapter = *registry_->Find(delivery.platform);
    Result<HttpRequest> request = adapter->BuildRequest(delivery, credential, clock_.WallNow());
    if (!request.has_value()) {
      ADD_FAILURE() << request.error().ToString();
      return AttemptReport{};
    }
    request->timeout = timeout;
    return adapter->Interpret(delivery, Send(std::move(*request)), clock_.WallNow());
  }

  void Configure(const std::string& patch) {
    Result<HttpResponse> r = Send({.url = base_ + "/_sim/config", .body = patch});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
  }

  json Stats(const std::string& destination) {
    Result<HttpResponse> r = Send({.method = "GET", .url = base_ + "/_sim/stats"});
    EXPECT_TRUE(r.has_value());
    json stats = json::parse(r.has_value() ? r->body : "{}", nullptr, false);
    return stats["destinations"][destination];
  }

  storage::Delivery Delivery(std::string platform, std::string destination, std::string payload,
                             std::string id) {
    storage::Delivery d;
    d.id = std::move(id);
    d.tenant = "acme";
    d.platform = std::move(platform);
    d.destination = std::move(destination);
    d.credential = "main";
    d.payload = std::move(payload);
    return d;
  }

  SimProcess sim_;
  std::string base_;
  std::unique_ptr<AdapterRegistry> registry_;
  boost::asio::io_context io_;
  SystemClock clock_;
  std::unique_ptr<HttpTransport> transport_;
};

Credential Token(std::string token) {
  return Credential{.name = "main", .platform = "", .token = std::move(token), .secrets = {}};
}

// Verifies Slack: a post is delivered with its ts; a 429 parks with Retry-After; an incoming
// webhook is delivered and an archived one disables the destination.
TEST_P(AdaptersSimTest, Slack) {
  Configure(R"({"slack":{"channel_burst":1,"channel_rate_per_s":0.01,"retry_after_s":30,
                         "archived_hooks":["T1/B1/gone"]}})");
  AttemptReport ok = Attempt(Delivery("slack", "C1", R"({"text":"hi"})", "S1"), Token("xoxb-1"));
  EXPECT_EQ(Classify(ok.outcome), OutcomeClass::kDelivered) << ok.attempt.detail;
  EXPECT_FALSE(ok.platform_ref.empty());
  AttemptReport limited =
      Attempt(Delivery("slack", "C1", R"({"text":"again"})", "S2"), Token("xoxb-1"));
  EXPECT_EQ(Classify(limited.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(limited.observation.retry_after, Millis(30'000));
  EXPECT_EQ(limited.outcome.platform_error, "ratelimited");
  AttemptReport hook = Attempt(
      Delivery("slack", base_ + "/services/T1/B1/x", R"({"text":"hi"})", "S3"), Credential{});
  EXPECT_EQ(Classify(hook.outcome), OutcomeClass::kDelivered) << hook.attempt.detail;
  AttemptReport gone = Attempt(
      Delivery("slack", base_ + "/services/T1/B1/gone", R"({"text":"hi"})", "S4"), Credential{});
  EXPECT_EQ(Classify(gone.outcome), OutcomeClass::kDeadLetter);
  EXPECT_TRUE(gone.disable_destination.has_value());
  EXPECT_EQ(Stats("slack:xoxb-1:C1")["accepted"], 1);
  EXPECT_EQ(Stats("slack:xoxb-1:C1")["early"], 0);
}

// Verifies Discord: bucket headers fold into the observation, a bucket 429 reads the body's
// retry_after, a retried nonce posts once, and an unknown webhook disables the destination.
TEST_P(AdaptersSimTest, Discord) {
  Configure(
      R"({"discord":{"bucket_limit":2,"bucket_window_ms":60000,"unknown_webhooks":["666"]}})");
  storage::Delivery first = Delivery("discord", "channels/42", R"({"content":"a"})", "D1");
  AttemptReport ok = Attempt(first, Token("bot-1"));
  EXPECT_EQ(Classify(ok.outcome), OutcomeClass::kDelivered) << ok.attempt.detail;
  EXPECT_EQ(ok.observation.limit, 2);
  EXPECT_EQ(ok.observation.remaining, 1);
  EXPECT_EQ(ok.observation.bucket, "a06de45e2b5c7f3d");
  AttemptReport retry = Attempt(first, Token("bot-1"));  // The same delivery again.
  EXPECT_EQ(Classify(retry.outcome), OutcomeClass::kDelivered);
  EXPECT_EQ(retry.platform_ref, ok.platform_ref);
  EXPECT_EQ(retry.observation.remaining, 0);
  AttemptReport limited =
      Attempt(Delivery("discord", "channels/42", R"({"content":"b"})", "D2"), Token("bot-1"));
  EXPECT_EQ(Classify(limited.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(limited.observation.scope, RateLimitScope::kUser);
  ASSERT_TRUE(limited.outcome.retry_after.has_value());
  EXPECT_GT(*limited.outcome.retry_after, Millis(50'000));
  EXPECT_LE(*limited.outcome.retry_after, Millis(60'000));
  json stats = Stats("discord:channel:42");
  EXPECT_EQ(stats["accepted"], 1);
  EXPECT_EQ(stats["duplicates"], 0);
  EXPECT_EQ(stats["duplicates_prevented"], 1);
  AttemptReport hook =
      Attempt(Delivery("discord", "webhooks/77/tok", R"({"content":"c"})", "D3"), Credential{});
  EXPECT_EQ(Classify(hook.outcome), OutcomeClass::kDelivered) << hook.attempt.detail;
  EXPECT_FALSE(hook.platform_ref.empty());
  AttemptReport unknown =
      Attempt(Delivery("discord", "webhooks/666/tok", R"({"content":"c"})", "D4"), Credential{});
  EXPECT_EQ(unknown.outcome.platform_error, "10015");
  EXPECT_TRUE(unknown.disable_destination.has_value());
}

// Verifies LINE: a push is delivered; a timeout then a retry with the same key is answered 409
// and counts as delivered, with one message accepted; quota and rate 429s are told apart.
TEST_P(AdaptersSimTest, Line) {
  const std::string messages = R"({"messages":[{"type":"text","text":"hi"}]})";
  AttemptReport ok = Attempt(Delivery("line", "U1", messages, "L1"), Token("line-1"));
  EXPECT_EQ(Classify(ok.outcome), OutcomeClass::kDelivered) << ok.attempt.detail;
  EXPECT_FALSE(ok.platform_ref.empty());

  Configure(R"({"line":{"faults":{"delay_ms":1500}}})");
  storage::Delivery slow = Delivery("line", "U2", messages, "L2");
  AttemptReport timeout = Attempt(slow, Token("line-2"), Millis(300));
  EXPECT_EQ(timeout.outcome.transport, pacing::TransportResult::kTimeout);
  EXPECT_EQ(Classify(timeout.outcome), OutcomeClass::kRetry);
  Configure(R"({"line":{"faults":{"delay_ms":0}}})");
  AttemptReport retried = Attempt(slow, Token("line-2"), Millis(5000));
  EXPECT_TRUE(retried.outcome.accepted)
      << retried.attempt.http_status << " " << retried.attempt.detail;
  EXPECT_EQ(Classify(retried.outcome), OutcomeClass::kDelivered);
  EXPECT_FALSE(retried.platform_ref.empty());
  json stats = Stats("line:line-2");
  EXPECT_EQ(stats["accepted"], 1);
  EXPECT_EQ(stats["duplicates"], 0);
  EXPECT_EQ(stats["duplicates_prevented"], 1);

  Configure(R"({"line":{"monthly_quota":1}})");
  (void)Attempt(Delivery("line", "U3", messages, "L3"), Token("line-3"));
  AttemptReport quota = Attempt(Delivery("line", "U3", messages, "L4"), Token("line-3"));
  EXPECT_EQ(Classify(quota.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(quota.outcome.platform_error, "monthly_limit");
  EXPECT_GT(quota.outcome.retry_after.value_or(Millis(0)), Millis(0));
  Configure(R"({"line":{"monthly_quota":-1,"rate_per_s":1}})");
  (void)Attempt(Delivery("line", "U4", messages, "L5"), Token("line-4"));
  AttemptReport rate = Attempt(Delivery("line", "U4", messages, "L6"), Token("line-4"));
  EXPECT_EQ(Classify(rate.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(rate.outcome.platform_error, "rate_limited");
  EXPECT_FALSE(rate.outcome.retry_after.has_value());
}

// Verifies webhooks: signatures verify in the simulator, also while the receiver has only the
// new secret and the sender signs with both; a wrong secret is refused; 410 disables.
TEST_P(AdaptersSimTest, Webhook) {
  Configure(R"({"hooks":{"signed":{"secrets":[")" + Secret('a') + R"("]},"rotated":{"secrets":[")" +
            Secret('b') +
            R"("]},"gone":{"faults":{"status":410}},)"
            R"("busy":{"faults":{"status":429,"retry_after_s":7}}}})");
  const Credential old_only{
      .name = "h", .platform = "webhook", .token = "", .secrets = {Secret('a')}};
  const Credential rotating{
      .name = "h", .platform = "webhook", .token = "", .secrets = {Secret('b'), Secret('a')}};
  AttemptReport ok =
      Attempt(Delivery("webhook", base_ + "/hooks/signed", R"({"n":1})", "W1"), old_only);
  EXPECT_EQ(Classify(ok.outcome), OutcomeClass::kDelivered) << ok.attempt.detail;
  AttemptReport both =
      Attempt(Delivery("webhook", base_ + "/hooks/signed", R"({"n":2})", "W2"), rotating);
  EXPECT_EQ(Classify(both.outcome), OutcomeClass::kDelivered) << both.attempt.detail;
  AttemptReport rotated =
      Attempt(Delivery("webhook", base_ + "/hooks/rotated", R"({"n":3})", "W3"), rotating);
  EXPECT_EQ(Classify(rotated.outcome), OutcomeClass::kDelivered) << rotated.attempt.detail;
  AttemptReport wrong =
      Attempt(Delivery("webhook", base_ + "/hooks/rotated", R"({"n":4})", "W4"), old_only);
  EXPECT_EQ(wrong.attempt.http_status, 401);
  EXPECT_EQ(Classify(wrong.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(Stats("hook:signed")["signature_failures"], 0);
  EXPECT_EQ(Stats("hook:rotated")["signature_failures"], 1);
  AttemptReport gone = Attempt(Delivery("webhook", base_ + "/hooks/gone", "{}", "W5"), old_only);
  EXPECT_EQ(Classify(gone.outcome), OutcomeClass::kDeadLetter);
  EXPECT_TRUE(gone.disable_destination.has_value());
  AttemptReport busy = Attempt(Delivery("webhook", base_ + "/hooks/busy", "{}", "W6"), old_only);
  EXPECT_EQ(Classify(busy.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(busy.observation.retry_after, Millis(7000));
}

INSTANTIATE_TEST_SUITE_P(Wires, AdaptersSimTest,
                         ::testing::Values(SimWire::kHttp, SimWire::kHttps1, SimWire::kHttps2),
                         [](const ::testing::TestParamInfo<SimWire>& info) {
                           return SimWireName(info.param);
                         });

}  // namespace
}  // namespace egress::adapters
