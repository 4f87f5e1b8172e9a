// Quotas end to end through a real Service: RocksDB on disk, the HTTP API over loopback, an
// injected clock, and a scripted transport so nothing leaves the process.

#include <chrono>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "dispatcher/base/clock.h"
#include "dispatcher/service/service.h"
#include "tests/support/fake_clock.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// The service with its attempts answered by a ScriptedTransport; stopped (drained) when
// destroyed.
class ScriptedService : public RunningService {
 public:
  ScriptedService(const Clock& clock, ServiceOptions o) : RunningService(clock) {
    auto transport = std::make_unique<adapters::ScriptedTransport>(io());
    transport_ = transport.get();
    Status started = Start(std::move(o), std::move(transport));
    EXPECT_TRUE(started.ok()) << started.ToString();
  }
  adapters::ScriptedTransport& transport() { return *transport_; }

 private:
  adapters::ScriptedTransport* transport_ = nullptr;  // owned by the service
};

json Delivery(int n, int cost = 1) {
  return {{"tenant", "acme"},
          {"platform", "webhook"},
          {"destination", "https://hooks.example.com/h"},
          {"credential", "hooks"},
          {"payload", {{"n", n}}},
          {"cost", cost}};
}

class QuotaServiceTest : public ::testing::Test {
 protected:
  ServiceOptions Options() {
    ServiceOptions o;
    o.http.listen = {.host = "127.0.0.1", .port = 0};
    o.admin_token = kAdminToken;
    o.store.path = dir_.Sub("store");
    adapters::Credential hooks;
    hooks.name = "hooks";
    hooks.platform = "webhook";
    hooks.secrets = {kSecret};
    o.credentials.emplace_back("acme", hooks);
    config::TierConfig pro;
    pro.quotas["burst"] = config::QuotaConfig{.limit = 20, .window = Millis(10'000)};
    pro.quotas["line_only"] =
        config::QuotaConfig{.limit = 1, .window = Millis(60'000), .platforms = {"line"}};
    o.quotas.tiers["pro"] = pro;
    o.quotas.tenant_tiers["acme"] = "pro";
    return o;
  }
  TestResponse Post(int port, const json& body) {
    return HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries", body.dump());
  }
  json Quota(int port, const std::string& name) {
    TestResponse r = HttpCallAs(kAdminToken, port, "GET", "/api/admin/tenants/acme/quotas");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json()["quotas"][name];
  }
  // Polls the delivery until it is `state` (bounded: a failed wait fails the test).
  // The id of the first delivery that is dead, waiting for one (which one the scripted 404
  // reaches depends on the order the loop sends them in).
  std::string WaitForDead(int port) {
    for (int waited = 0; waited < 20'000; waited += 10) {
      TestResponse r = HttpCallAs(kAdminToken, port, "GET", "/v1/deliveries?state=dead");
      if (r.status == 200) {
        const json list = r.Json();
        if (list.contains("deliveries") && !list["deliveries"].empty()) {
          return list["deliveries"][0]["id"];
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "no delivery became dead";
    return "";
  }

  void WaitFor(int port, const std::string& id, const std::string& state) {
    std::string last;
    for (int waited = 0; waited < 20'000; waited += 10) {
      TestResponse r = HttpCallAs(kAdminToken, port, "GET", "/v1/deliveries/" + id);
      last = r.body;
      if (r.status == 200 && r.Json().value("state", "") == state) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << id << " never became " << state << ": " << last;
  }

  TempDir dir_;
  FakeClock clock_;
};

// Verifies the issue's case: a quota of 20 per 10 s takes 20, answers the 21st 429
// quota_exceeded with Retry-After <= 10 s and the quota's headers, opens again slice by slice as
// the window slides (never the whole limit at once), and keeps its count across a restart.
TEST_F(QuotaServiceTest, TwentyPerTenSecondsSlidesAndSurvivesRestart) {
  {
    ScriptedService s(clock_, Options());
    for (int i = 0; i < 20; ++i) {
      TestResponse r = Post(s.port(), Delivery(i));
      ASSERT_EQ(r.status, 202) << i << ": " << r.body;
      clock_.Advance(Millis(100));
    }
    TestResponse over = Post(s.port(), Delivery(20));
    ASSERT_EQ(over.status, 429) << over.body;
    const json body = over.Json();
    EXPECT_EQ(body["error"], "quota_exceeded");
    EXPECT_EQ(body["quota"], "burst");
    const int64_t retry_ms = body["retry_after_ms"].get<int64_t>();
    EXPECT_GT(retry_ms, 0);
    EXPECT_LE(retry_ms, 10'000);
    const int retry_s = std::stoi(over.Header("Retry-After"));
    EXPECT_GE(retry_s, 1);
    EXPECT_LE(retry_s, 10);
    EXPECT_EQ(over.Header("X-RateLimit-Limit"), "20");
    EXPECT_EQ(over.Header("X-RateLimit-Remaining"), "0");
    EXPECT_EQ(over.Header("RateLimit-Policy"), "\"burst\";q=20;w=10");
    EXPECT_EQ(Quota(s.port(), "burst")["used"], 20);

    // Just before the wait is over: still refused. At it: a few units, not the whole limit.
    clock_.Advance(Millis(retry_ms - 1));
    EXPECT_EQ(Post(s.port(), Delivery(21)).status, 429);
    clock_.Advance(Millis(1));
    int accepted = 0;
    while (Post(s.port(), Delivery(100 + accepted)).status == 202) {
      ++accepted;
      ASSERT_LT(accepted, 20);
    }
    EXPECT_GE(accepted, 1);
    EXPECT_LE(accepted, 3);
  }
  // A restart reads the count back from the store.
  ScriptedService s(clock_, Options());
  TestResponse again = Post(s.port(), Delivery(200));
  EXPECT_EQ(again.status, 429) << again.body;
  EXPECT_EQ(Quota(s.port(), "burst")["used"], 20);
  // Once a window has passed with nothing sent, the whole limit is back.
  clock_.Advance(Millis(10'000 + 200));
  EXPECT_EQ(Quota(s.port(), "burst")["used"], 0);
  EXPECT_EQ(Post(s.port(), Delivery(300, 20)).status, 202);
}

// Verifies that a batch over its quota answers 207 with quota_exceeded per item, that a
// delivery that ends dead is refunded once (also across a restart), and GET /v1/quotas. On the
// system clock (the delivery loop sends on its own), with an hour's window so that nothing
// leaves it while the test runs.
TEST_F(QuotaServiceTest, BatchPerItemAndDeadRefundedOnce) {
  SystemClock clock;
  ServiceOptions o = Options();
  o.quotas.tiers["pro"].quotas["burst"].window = Millis(3'600'000);
  std::string dead_id;
  {
    ScriptedService s(clock, o);
    json items = json::array();
    for (int i = 0; i < 25; ++i) {
      items.push_back(Delivery(i));
    }
    // One item dies: refused for good by the receiver.
    s.transport().PushStatus(404);
    TestResponse r = HttpCallAs(kAdminToken, s.port(), "POST", "/v1/deliveries/batch",
                                json{{"deliveries", items}}.dump());
    ASSERT_EQ(r.status, 207) << r.body;
    const json answer = r.Json();
    const json& results = answer["results"];
    ASSERT_EQ(results.size(), 25u);
    for (size_t i = 0; i < 25; ++i) {
      if (i < 20) {
        EXPECT_TRUE(results[i].value("created", false)) << results[i];
      } else {
        EXPECT_EQ(results[i]["error"], "quota_exceeded") << results[i];
        EXPECT_EQ(results[i]["status"], 429);
        EXPECT_EQ(results[i]["quota"], "burst");
        EXPECT_GT(results[i]["retry_after_ms"].get<int64_t>(), 0);
        // Over because of the batch's own items, not "never fits" (one unit fits a limit of 20).
        EXPECT_EQ(results[i]["message"].get<std::string>().find("never fits"), std::string::npos)
            << results[i];
      }
    }
    dead_id = WaitForDead(s.port());
    ASSERT_FALSE(dead_id.empty());
    EXPECT_EQ(Quota(s.port(), "burst")["used"], 19);
  }
  ScriptedService s(clock, o);
  EXPECT_EQ(Quota(s.port(), "burst")["used"], 19);
  // A replay charges it again, once.
  TestResponse replay =
      HttpCallAs(kAdminToken, s.port(), "POST", "/v1/deliveries/" + dead_id + "/replay");
  ASSERT_EQ(replay.status, 200) << replay.body;
  WaitFor(s.port(), dead_id, "delivered");
  EXPECT_EQ(Quota(s.port(), "burst")["used"], 20);
  // The tenant's own view; a quota filtered to another platform counts nothing.
  TestResponse mine = HttpCallAs(kAdminToken, s.port(), "GET", "/v1/quotas?tenant=acme");
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(mine.Json()["tier"], "pro");
  EXPECT_EQ(mine.Json()["quotas"]["burst"]["limit"], 20);
  EXPECT_EQ(mine.Json()["quotas"]["burst"]["window"], "1h");
  EXPECT_EQ(mine.Json()["quotas"]["burst"]["source"], "tier");
  EXPECT_EQ(mine.Json()["quotas"]["line_only"]["used"], 0);
  EXPECT_EQ(HttpCallAs(kAdminToken, s.port(), "GET", "/v1/quotas").status, 400);
  // /metrics: the used ratio, the tier's utilization and the rejections counted.
  const std::string metrics = HttpCallAs(kAdminToken, s.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("relay_egress_quota_used_ratio{tenant=\"acme\",quota=\"burst\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("relay_egress_tier_utilization_ratio{tier=\"pro\",budget=\"burst\"} 1"),
            std::string::npos);
}

// Verifies PUT quotas: replace-map semantics (the tenant's own over the tier's, {} back to the
// tier's), persisted across a restart, and typed errors for malformed quotas.
TEST_F(QuotaServiceTest, PutQuotasReplacesAndPersists) {
  {
    ScriptedService s(clock_, Options());
    TestResponse put = HttpCallAs(kAdminToken, s.port(), "PUT", "/api/admin/tenants/acme/quotas",
                                  R"({"quotas":{"burst":{"limit":2,"window":"1m"}}})");
    ASSERT_EQ(put.status, 200) << put.body;
    EXPECT_EQ(put.Json()["quotas"]["burst"]["limit"], 2);
    EXPECT_EQ(put.Json()["quotas"]["burst"]["source"], "tenant");
    EXPECT_EQ(put.Json()["quotas"]["line_only"]["source"], "tier");
    for (const char* bad :
         {R"({"quotas":{"burst":{"limit":0,"window":"1m"}}})",
          R"({"quotas":{"burst":{"limit":5,"window":"forever"}}})",
          R"({"quotas":{"burst":{"limit":5,"window":"1m","platforms":["fax"]}}})",
          R"({"quotas":{"bad name":{"limit":5,"window":"1m"}}})", R"({"quotas":[]})", "[]"}) {
      TestResponse r =
          HttpCallAs(kAdminToken, s.port(), "PUT", "/api/admin/tenants/acme/quotas", bad);
      EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    }
  }
  ScriptedService s(clock_, Options());
  EXPECT_EQ(Post(s.port(), Delivery(1, 2)).status, 202);
  TestResponse over = Post(s.port(), Delivery(2));
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(over.Header("RateLimit-Policy"), "\"burst\";q=2;w=60");
  TestResponse reset = HttpCallAs(kAdminToken, s.port(), "PUT", "/api/admin/tenants/acme/quotas",
                                  R"({"quotas":{}})");
  ASSERT_EQ(reset.status, 200) << reset.body;
  EXPECT_EQ(reset.Json()["quotas"]["burst"]["limit"], 20);
  EXPECT_EQ(Post(s.port(), Delivery(3)).status, 202);
}

}  // namespace
}  // namespace egress::service
