// Certificate verification end to end: a real Service delivering webhooks to the simulator over
// HTTPS (HTTP/2 offered), with a certificate the service must refuse. The refusal is transient
// (a receiver's certificate is usually fixed within hours): retried on the webhook schedule and
// dead with reason tls_rejected when the schedule runs out, every attempt recording
// platform_error tls_rejected, and no request ever reaching the simulator.

#include <chrono>
#include <fstream>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "dispatcher/base/platform.h"
#include "dispatcher/service/service.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certificates.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr int kAttempts = 3;
constexpr char kAdminToken[] = "test-admin-token-0123456789";

class ServiceTlsTest : public ::testing::Test {
 protected:
  // Starts the simulator with `sim_args` and the service trusting `ca_file` (unset: the
  // simulator's own CA).
  void Start(const std::vector<std::string>& sim_args, std::optional<std::string> ca_file) {
    Status started = sim_.Start(SimWire::kHttps2, sim_args);
    ASSERT_TRUE(started.ok()) << started.ToString();
    ServiceOptions o;
    o.http.listen = {.host = "127.0.0.1", .port = 0};
    o.admin_token = kAdminToken;
    o.store.path = dir_.Sub("store");
    o.endpoints.webhook_ssrf.allow_private_networks = true;  // the receiver is on loopback
    o.transport.ca_file = ca_file.value_or(sim_.ca_file());
    pacing::RetryPolicy& retry = o.scheduler.retry[static_cast<size_t>(Platform::kWebhook)];
    retry.schedule = {Millis(50)};
    retry.max_attempts = kAttempts;
    o.credentials.push_back(
        {"acme", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}});
    started = svc_.Start(o);
    ASSERT_TRUE(started.ok()) << started.ToString();
    port_ = svc_.port();
  }

  void TearDown() override { svc_.Stop(); }

  // Posts one webhook delivery to the simulator, named `host`, and waits (bounded) until it is
  // in `state`; returns the delivery's record.
  json DeliverUntil(const std::string& state, const std::string& host = "127.0.0.1") {
    const std::string url = "https://" + host + ":" + std::to_string(sim_.port()) + "/hooks/tls";
    json request = {{"tenant", "acme"},
                    {"platform", "webhook"},
                    {"destination", url},
                    {"credential", "hooks"},
                    {"payload", {{"n", 1}}}};
    TestResponse posted = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries", request.dump());
    EXPECT_EQ(posted.status, 202) << posted.body;
    const std::string id = posted.Json().value("id", "");
    json record;
    for (int waited = 0; waited < 20'000; waited += 20) {
      record = HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries/" + id).Json();
      if (record.value("state", "") == state) {
        return record;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "not " << state << " in time: " << record.dump();
    return record;
  }

  // `requests_before`: requests the simulator had seen before this delivery.
  void ExpectDeadWithTlsRejected(const json& record, int requests_before = 0) {
    EXPECT_EQ(record["state"], "dead") << record.dump();
    EXPECT_EQ(record["reason"], "tls_rejected") << record.dump();
    EXPECT_EQ(record["attempts"], kAttempts) << record.dump();
    ASSERT_TRUE(record["attempts_history"].is_array()) << record.dump();
    EXPECT_EQ(record["attempts_history"].size(), static_cast<size_t>(kAttempts)) << record.dump();
    for (const json& attempt : record["attempts_history"]) {
      EXPECT_EQ(attempt["platform_error"], "tls_rejected") << attempt.dump();
    }
    // The handshake failed each time: the simulator saw no request.
    json stats = sim_.Stats();
    EXPECT_EQ(stats["totals"]["requests"], requests_before) << stats.dump();
  }

  TempDir dir_;
  SimProcess sim_;
  SystemClock clock_;
  RunningService svc_{clock_};
  int port_ = 0;
};

// Verifies that a receiver whose certificate no configured CA signed (the service trusts another
// run's CA) is refused: retried, then dead with tls_rejected.
TEST_F(ServiceTlsTest, UnknownIssuerIsDeadWithTlsRejected) {
  Result<TestPki> other = MakeTestPki();
  ASSERT_TRUE(other.has_value()) << other.error().ToString();
  const std::string other_ca = dir_.Sub("other-ca.pem");
  { std::ofstream(other_ca) << other->ca_cert_pem; }
  Start({}, other_ca);
  ExpectDeadWithTlsRejected(DeliverUntil("dead"));
}

// Verifies that a certificate signed by the trusted CA but not for the name the service
// connects to is refused the same way: the simulator's certificate names 127.0.0.1 only; a
// delivery there is delivered (the CA is trusted), one to localhost is dead with tls_rejected.
TEST_F(ServiceTlsTest, NameMismatchIsDeadWithTlsRejected) {
  Start({"--tls-names", "127.0.0.1"}, std::nullopt);
  json delivered = DeliverUntil("delivered", "127.0.0.1");
  EXPECT_EQ(delivered["state"], "delivered") << delivered.dump();
  ExpectDeadWithTlsRejected(DeliverUntil("dead", "localhost"), 1);
}

}  // namespace
}  // namespace egress::service
