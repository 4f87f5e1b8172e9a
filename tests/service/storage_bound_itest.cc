// Per-tenant bounds of stored bytes end to end through a real Service: RocksDB on disk, the HTTP
// API over loopback, the system clock, and a scripted transport so nothing leaves the process.

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "dispatcher/base/clock.h"
#include "dispatcher/service/service.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
// acme's own bound: a few of its deliveries (a record of this payload takes about 1.3 KB, and
// intake counts 16 KiB more for the history its attempts may add: two fit).
constexpr uint64_t kAcmeBound = 20'000;

json Delivery(const std::string& tenant, int n) {
  return {{"tenant", tenant},
          {"platform", "webhook"},
          {"destination", "https://hooks.example.com/" + tenant},
          {"credential", "hooks"},
          {"payload", {{"n", n}, {"pad", std::string(1000, 'p')}}}};
}

class StorageBoundServiceTest : public ::testing::Test {
 protected:
  StorageBoundServiceTest() {
    options_.http.listen = {.host = "127.0.0.1", .port = 0};
    options_.admin_token = kAdminToken;
    options_.store.path = dir_.Sub("store");
    for (const char* tenant : {"acme", "globex"}) {
      adapters::Credential hooks;
      hooks.name = "hooks";
      hooks.platform = "webhook";
      hooks.secrets = {kSecret};
      options_.credentials.emplace_back(tenant, hooks);
    }
    // The deployment's bound leaves globex room; acme has a small one of its own.
    options_.max_stored_bytes = 10 << 20;
    options_.tenant_max_stored_bytes["acme"] = kAcmeBound;
    // Dead records go at the first retention pass after they die.
    options_.retention.policy.dead_ms = 1;
    options_.retention.interval = Millis(200);
  }

  void Start() {
    auto transport = std::make_unique<adapters::ScriptedTransport>(svc_.io());
    transport_ = transport.get();
    transport_->Hold(true);  // nothing finishes (or dies, or is purged) until released
    transport_->SetFallback(adapters::HttpResponse{.status = 404, .body = "gone"});
    Status started = svc_.Start(options_, std::move(transport));
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  TestResponse Post(const std::string& target, const json& body) {
    return HttpCallAs(kAdminToken, svc_.port(), "POST", target, body.dump());
  }

  TempDir dir_;
  SystemClock clock_;
  ServiceOptions options_;
  RunningService svc_{clock_};
  adapters::ScriptedTransport* transport_ = nullptr;  // owned by the service
};

// Verifies the issue's case: a tenant whose records reach its max_stored_bytes gets 429
// storage_quota_exceeded (Retry-After, its stored bytes and bound; its batch items refused in a
// 207) while another tenant of the same service is still answered 202, that the refusals are
// counted under reason storage_quota_exceeded, and that the tenant is accepted again once
// retention has removed its dead records.
TEST_F(StorageBoundServiceTest, TenantOverItsBoundIsRefusedOthersAreNot) {
  Start();
  int accepted = 0;
  TestResponse over;
  for (int i = 0; i < 20; ++i) {
    TestResponse r = Post("/v1/deliveries", Delivery("acme", i));
    if (r.status != 202) {
      over = r;
      break;
    }
    ++accepted;
  }
  EXPECT_GE(accepted, 2);
  EXPECT_LE(accepted, 4);
  ASSERT_EQ(over.status, 429) << over.body;
  const json body = over.Json();
  EXPECT_EQ(body["error"], "storage_quota_exceeded") << over.body;
  EXPECT_EQ(body["max_stored_bytes"], kAcmeBound) << over.body;
  EXPECT_LE(body["stored_bytes"].get<uint64_t>(), kAcmeBound) << over.body;
  EXPECT_GT(body["stored_bytes"].get<uint64_t>(), 1000u * accepted) << over.body;
  EXPECT_EQ(body["retry_after_ms"], 1000) << over.body;
  EXPECT_EQ(over.Header("Retry-After"), "1");
  EXPECT_FALSE(body["message"].get<std::string>().empty());

  // Another tenant of the same service, alone and in a batch beside acme's refused items.
  TestResponse other = Post("/v1/deliveries", Delivery("globex", 0));
  EXPECT_EQ(other.status, 202) << other.body;
  json batch = {
      {"deliveries", {Delivery("acme", 100), Delivery("globex", 1), Delivery("acme", 101)}}};
  TestResponse b = Post("/v1/deliveries/batch", batch);
  ASSERT_EQ(b.status, 207) << b.body;
  const json results = b.Json()["results"];
  for (int i : {0, 2}) {
    EXPECT_EQ(results[i]["status"], 429) << b.body;
    EXPECT_EQ(results[i]["error"], "storage_quota_exceeded") << b.body;
    EXPECT_EQ(results[i]["max_stored_bytes"], kAcmeBound) << b.body;
    EXPECT_EQ(results[i]["retry_after_ms"], 1000) << b.body;
  }
  EXPECT_EQ(results[1]["created"], true) << b.body;
  const std::string metrics = HttpCallAs(kAdminToken, svc_.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find(R"(relay_egress_intake_rejections_total{tenant="acme",)"
                         R"(reason="storage_quota_exceeded"} 3)"),
            std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find(R"(relay_egress_intake_rejections_total{tenant="globex")"),
            std::string::npos)
      << metrics;

  // The receiver refuses them for good: acme's records are dead (still counted) until retention
  // removes them; then acme is accepted again.
  svc_.OnLoop([this] {
    transport_->Hold(false);
    transport_->Release();
  });
  int status = 0;
  for (int waited = 0; waited < 20'000 && status != 202; waited += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    status = Post("/v1/deliveries", Delivery("acme", 1000 + waited)).status;
    ASSERT_TRUE(status == 202 || status == 429) << status;
  }
  EXPECT_EQ(status, 202);
}

}  // namespace
}  // namespace egress::service
