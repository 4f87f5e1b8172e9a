// The per-platform trust store ([platforms.<p>] ca_file) and per-credential client certificates
// (mTLS) through the real adapters (TimedAdapters, as the delivery loop uses them) and
// CurlTransport: against two simulators with CAs of their own, and against Debian's nginx
// requiring a client certificate (skipped, saying so, without nginx).

#include <fstream>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "adapters/adapter_registry.h"
#include "adapters/base64.h"
#include "adapters/curl_transport.h"
#include "adapters/request_timeouts.h"
#include "dispatcher/pacing/classify.h"
#include "tests/support/nginx_server.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"

namespace egress::adapters {
namespace {

using pacing::Classify;
using pacing::OutcomeClass;

class PlatformTlsTest : public ::testing::Test {
 protected:
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

  // Builds (through `adapters`), sends and interprets one attempt.
  AttemptReport Attempt(const TimedAdapters& adapters, const storage::Delivery& delivery,
                        const Credential& credential) {
    const PlatformAdapter* adapter = *adapters.Find(delivery.platform);
    Result<HttpRequest> request = adapter->BuildRequest(delivery, credential, clock_.WallNow());
    if (!request.has_value()) {
      ADD_FAILURE() << request.error().ToString();
      return AttemptReport{};
    }
    return adapter->Interpret(delivery, Send(std::move(*request)), clock_.WallNow());
  }

  static storage::Delivery Delivery(std::string platform, std::string destination,
                                    std::string payload, std::string credential) {
    storage::Delivery d;
    d.id = "d-" + credential;
    d.tenant = "acme";
    d.platform = std::move(platform);
    d.destination = std::move(destination);
    d.credential = std::move(credential);
    d.payload = std::move(payload);
    return d;
  }

  static PlatformEndpoints Endpoints(const std::string& slack_base_url) {
    PlatformEndpoints endpoints;
    endpoints.slack_base_url = slack_base_url;
    endpoints.webhook_ssrf.allow_private_networks = true;  // the servers are on loopback
    return endpoints;
  }

  boost::asio::io_context io_;
  SystemClock clock_;
  std::unique_ptr<HttpTransport> transport_;
};

const std::string kSecret = "whsec_" + Base64Encode(std::string(32, 'k'));

// Verifies [platforms.<p>] ca_file: Slack trusts only the first simulator's CA, webhooks only
// the second's (and the transport neither: the system's). Each platform reaches the server its
// CA signed and refuses the other's with tls_rejected (retried, dead with that reason when the
// schedule runs out), whichever platform asked first on that origin.

TEST_F(PlatformTlsTest, EachPlatformTrustsItsOwnCa) {
  SimProcess first;
  ASSERT_TRUE(first.Start(SimWire::kHttps2).ok());
  SimProcess second;
  ASSERT_TRUE(second.Start(SimWire::kHttps2).ok());
  transport_ = NewCurlTransport(io_, clock_, TransportOptions{});
  PlatformTrust trust;
  trust[static_cast<size_t>(Platform::kSlack)] = {.ca_file = first.ca_file()};
  trust[static_cast<size_t>(Platform::kWebhook)] = {.ca_file = second.ca_file()};
  // Slack's API at the first simulator, and (another deployment) at the second.
  AdapterRegistry at_first(Endpoints(first.BaseUrl()));
  AdapterRegistry at_second(Endpoints(second.BaseUrl()));
  TimedAdapters slack_first(at_first, PlatformTimeouts{}, trust);
  TimedAdapters slack_second(at_second, PlatformTimeouts{}, trust);
  const Credential token{.name = "bot", .platform = "slack", .token = "xoxb-1"};
  const Credential hooks{.name = "hooks", .platform = "webhook", .secrets = {kSecret}};

  AttemptReport slack_ok =
      Attempt(slack_first, Delivery("slack", "C1", R"({"text":"hi"})", "bot"), token);
  EXPECT_EQ(Classify(slack_ok.outcome), OutcomeClass::kDelivered) << slack_ok.attempt.detail;
  AttemptReport hook_ok =
      Attempt(slack_first,
              Delivery("webhook", second.BaseUrl() + "/hooks/t", R"({"n":1})", "hooks"), hooks);
  EXPECT_EQ(Classify(hook_ok.outcome), OutcomeClass::kDelivered) << hook_ok.attempt.detail;

  // The other's server: on an origin the other platform has a live connection to.
  AttemptReport slack_refused =
      Attempt(slack_second, Delivery("slack", "C1", R"({"text":"hi"})", "bot"), token);
  EXPECT_EQ(slack_refused.attempt.platform_error, "tls_rejected") << slack_refused.attempt.detail;
  EXPECT_EQ(Classify(slack_refused.outcome), OutcomeClass::kRetry);
  EXPECT_EQ(slack_refused.outcome.exhausted_reason, "tls_rejected");
  AttemptReport hook_refused = Attempt(
      slack_first, Delivery("webhook", first.BaseUrl() + "/hooks/t", R"({"n":1})", "hooks"), hooks);
  EXPECT_EQ(hook_refused.attempt.platform_error, "tls_rejected") << hook_refused.attempt.detail;
  EXPECT_EQ(Classify(hook_refused.outcome), OutcomeClass::kRetry);

  // The refused requests never reached a simulator: one request each (and the stats call).
  for (SimProcess* sim : {&first, &second}) {
    auto stats = sim->Stats();
    EXPECT_EQ(stats["totals"]["requests"], 1) << stats.dump();
  }
}

// Verifies client certificates per credential against nginx requiring one signed by the run's
// client CA: the webhook credential with client_cert_file / client_key_file is delivered; the
// one without is answered 400 by nginx ("No required SSL certificate was sent"), which the
// webhook adapter reads as a permanent refusal (dead letter, http_status 400); a credential
// with a certificate the server does not trust is answered the same way.
TEST_F(PlatformTlsTest, ClientCertificateGoesWithItsCredential) {
  if (NginxServer::Binary().empty()) {
    GTEST_SKIP() << "nginx is not installed (apt-get install nginx-light); ./dev test installs it";
  }
  const TestCertificate client = MakeTestCertificate("tenant-a");
  const TestCertificate stranger = MakeTestCertificate("stranger");
  NginxServer nginx({.client_ca_pem = client.cert_pem});
  ASSERT_NE(nginx.port(), 0) << nginx.error();
  TempDir dir;
  std::ofstream(dir.Sub("a.pem")) << client.cert_pem;
  std::ofstream(dir.Sub("a.key")) << client.key_pem;
  std::ofstream(dir.Sub("s.pem")) << stranger.cert_pem;
  std::ofstream(dir.Sub("s.key")) << stranger.key_pem;
  transport_ = NewCurlTransport(io_, clock_, TransportOptions{});
  PlatformTrust trust;
  trust[static_cast<size_t>(Platform::kWebhook)] = {.ca_file = nginx.ca_file()};
  AdapterRegistry registry(Endpoints("https://slack.invalid"));
  TimedAdapters adapters(registry, PlatformTimeouts{}, trust);
  const Credential with{.name = "mtls",
                        .platform = "webhook",
                        .secrets = {kSecret},
                        .client_cert_file = dir.Sub("a.pem"),
                        .client_key_file = dir.Sub("a.key")};
  const Credential without{.name = "plain", .platform = "webhook", .secrets = {kSecret}};
  const Credential other{.name = "other",
                         .platform = "webhook",
                         .secrets = {kSecret},
                         .client_cert_file = dir.Sub("s.pem"),
                         .client_key_file = dir.Sub("s.key")};
  const std::string url = nginx.Url("/hooks/m");
  for (int round = 0; round < 2; ++round) {  // the second on the connections the first left
    AttemptReport ok = Attempt(adapters, Delivery("webhook", url, R"({"n":1})", "mtls"), with);
    EXPECT_EQ(Classify(ok.outcome), OutcomeClass::kDelivered) << ok.attempt.detail;
    EXPECT_EQ(ok.attempt.http_status, 200);
    for (const Credential* refused : {&without, &other}) {
      AttemptReport no =
          Attempt(adapters, Delivery("webhook", url, R"({"n":1})", refused->name), *refused);
      EXPECT_EQ(no.attempt.http_status, 400) << refused->name << " " << no.attempt.detail;
      EXPECT_EQ(Classify(no.outcome), OutcomeClass::kDeadLetter) << refused->name;
    }
  }
}

}  // namespace
}  // namespace egress::adapters
