// Shadow limits end to end (docs/api.md, "Shadow limits"): a real Service on RocksDB, the
// platform simulator's webhook receiver as a child process, real loopback HTTP.

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "dispatcher/service/service.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token";
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// A counter's value in the /metrics text (0 when absent).
double MetricValue(const std::string& text, const std::string& series) {
  const size_t at = text.find(series + " ");
  return at == std::string::npos ? 0 : std::stod(text.substr(at + series.size() + 1));
}

class ShadowLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sim_.Start(SimWire::kHttp).ok());
    options_.http.listen = {.host = "127.0.0.1", .port = 0};
    options_.admin_token = kAdminToken;
    options_.store.path = dir_.Sub("store");
    options_.endpoints.webhook_ssrf.allow_private_networks = true;  // the receiver is on loopback
    // The real pace: 20 a second per webhook destination.
    options_.budget_defaults = {{pacing::BudgetName::kWebhookDestination, {20, 1000, 1}}};
    options_.credentials.push_back(
        {"acme", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}});
    Start();
  }

  void Start() {
    Status started = svc_.Start(options_);
    ASSERT_TRUE(started.ok()) << started.ToString();
    port_ = svc_.port();
  }

  TestResponse Call(const std::string& method, const std::string& target,
                    const std::string& body = "") {
    return HttpCallAs(kAdminToken, port_, method, target, body);
  }

  TempDir dir_;
  SimProcess sim_;
  SystemClock clock_;
  ServiceOptions options_;
  RunningService svc_{clock_};
  int port_ = 0;
};

// Verifies a shadow limit at half a webhook destination's real pace: every delivery goes at the
// real pace (none deferred by it, none refused by the receiver), the metrics and the destination
// count what it would have throttled (about half), and the limit is stored: GET shows it apart
// from the budgets in force, and a restart keeps it.
TEST_F(ShadowLimitsTest, CountsWhatItWouldHaveThrottledAndHoldsNothing) {
  TestResponse put = Call(
      "PUT", "/api/admin/tenants/acme/rate_limits",
      json{{"rate_limits",
            {{"webhook_destination", {{"limit", 10}, {"scale_ms", 1000}, {"mode", "shadow"}}}}}}
          .dump());
  ASSERT_EQ(put.status, 200) << put.body;
  json got = put.Json();
  EXPECT_EQ(got["shadow"]["webhook_destination"]["limit"], 10) << got.dump();
  EXPECT_EQ(got["rate_limits"]["webhook_destination"]["limit"], 20) << got.dump();
  EXPECT_EQ(got["rate_limits"]["webhook_destination"]["overridden"], false) << got.dump();
  EXPECT_EQ(
      Call("PUT", "/api/admin/tenants/acme/rate_limits",
           R"({"rate_limits":{"webhook_destination":{"limit":1,"scale_ms":1000,"mode":"dry"}}})")
          .status,
      400);

  constexpr int kDeliveries = 60;
  json batch{{"deliveries", json::array()}};
  for (int i = 0; i < kDeliveries; ++i) {
    batch["deliveries"].push_back({{"tenant", "acme"},
                                   {"platform", "webhook"},
                                   {"destination", sim_.BaseUrl() + "/hooks/shadowed"},
                                   {"credential", "hooks"},
                                   {"payload", {{"n", i}}}});
  }
  const SteadyTime start = clock_.Now();
  ASSERT_EQ(Call("POST", "/v1/deliveries/batch", batch.dump()).status, 202);
  json stats;
  for (int waited = 0; waited < 30'000; waited += 20) {
    stats = Call("GET", "/v1/stats").Json();
    if (stats["delivered"] == kDeliveries) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(stats["delivered"], kDeliveries) << stats.dump();
  const double seconds = std::chrono::duration<double>(clock_.Now() - start).count();
  // At the real 20 a second: about 3 s; at the shadow's 10, 6 s (a loaded machine gets slack).
  EXPECT_LT(seconds, 5.5);
  std::printf("%d delivered in %.2f s under a shadow limit of half the pace\n", kDeliveries,
              seconds);
  const std::string metrics = Call("GET", "/metrics").body;
  const double checked = MetricValue(
      metrics, R"(relay_egress_shadow_checked_total{tenant="acme",budget="webhook_destination"})");
  const double throttled = MetricValue(
      metrics,
      R"(relay_egress_shadow_throttled_total{tenant="acme",budget="webhook_destination"})");
  EXPECT_EQ(checked, kDeliveries);
  // Paced at 20 a second less the margin against a shadow of 10: about half would have waited.
  EXPECT_NEAR(throttled / checked, 0.5, 0.1) << throttled << " of " << checked;
  json dests = Call("GET", "/v1/destinations").Json();
  ASSERT_EQ(dests["destinations"].size(), 1u) << dests.dump();
  EXPECT_EQ(dests["destinations"][0]["shadow"]["checked"], kDeliveries) << dests.dump();
  EXPECT_EQ(dests["destinations"][0]["shadow"]["throttled"], throttled) << dests.dump();
  const json sim = sim_.Stats();
  EXPECT_EQ(sim["totals"]["accepted"], kDeliveries);

  svc_.Stop();
  Start();
  got = Call("GET", "/api/admin/tenants/acme/rate_limits").Json();
  EXPECT_EQ(got["shadow"]["webhook_destination"]["limit"], 10) << got.dump();
  ASSERT_EQ(Call("PUT", "/api/admin/tenants/acme/rate_limits", R"({"rate_limits":{}})").status,
            200);
  EXPECT_TRUE(Call("GET", "/api/admin/tenants/acme/rate_limits").Json()["shadow"].empty());
}

}  // namespace
}  // namespace egress::service
