// A payload nested 100,000 deep through every path that stores or walks a payload: intake
// (single and batch) refuses it; records that hold one already (written with the storage API, as
// a store from before the intake bound would) are recovered, built into requests by the
// adapters, shown, listed and replayed, and the service lives through all of it. A real Service
// over loopback HTTP; attempts go to a ScriptedTransport, never the network.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/service/service.h"
#include "storage/rocks_queue_store.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token";

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr size_t kDepth = 100'000;

// {"a":[[[...]]]}: the object plus kDepth arrays.
std::string DeepPayload() {
  return "{\"a\":" + std::string(kDepth, '[') + std::string(kDepth, ']') + "}";
}

class DeepPayloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.http.listen = {.host = "127.0.0.1", .port = 0};
    options_.admin_token = kAdminToken;
    options_.store.path = dir_.Sub("store");
    options_.credentials = {
        {"acme", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}},
        {"acme", {.name = "bot", .platform = "slack", .token = "xoxb-acme"}},
        {"acme", {.name = "dbot", .platform = "discord", .token = "bot-acme"}},
        {"acme", {.name = "line", .platform = "line", .token = "line-acme"}}};
  }

  void StartService() {
    auto transport = std::make_unique<adapters::ScriptedTransport>(svc_.io());
    transport_ = transport.get();
    Status started = svc_.Start(options_, std::move(transport));
    ASSERT_TRUE(started.ok()) << started.ToString();
    port_ = svc_.port();
  }

  void TearDown() override { svc_.Stop(); }

  // The bodies of the requests the transport was given, read on the loop.
  std::vector<std::string> SentBodies() {
    return svc_.OnLoop([&] {
      std::vector<std::string> out;
      for (const adapters::HttpRequest& r : transport_->requests()) {
        out.push_back(r.body);
      }
      return out;
    });
  }

  // Polls the stats until `pred` holds (bounded: a failed wait fails the test).
  json WaitForStats(const std::function<bool(const json&)>& pred) {
    json stats;
    for (int waited = 0; waited < 20'000; waited += 20) {
      stats = HttpCallAs(kAdminToken, port_, "GET", "/v1/stats").Json();
      if (pred(stats)) {
        return stats;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "timed out; last stats: " << stats.dump();
    return stats;
  }

  TempDir dir_;
  SystemClock clock_;
  ServiceOptions options_;
  RunningService svc_{clock_};
  adapters::ScriptedTransport* transport_ = nullptr;  // owned by the service
  int port_ = 0;
};

// Verifies that the walking paths are safe on records that already hold a 100,000-deep payload:
// the service recovers them; the Slack, Discord and LINE adapters refuse to build a request from
// one (dead, with the reason) while the webhook adapter sends its bytes as they are; the record
// shows (the payload as a string), lists, and replays one by one and by filter, each replay
// ending the same way; and the service answers throughout.
TEST_F(DeepPayloadTest, StoredDeepPayloadsAreWalkedSafely) {
  const std::string payload = DeepPayload();
  const std::map<std::string, storage::NewDelivery> in_store = {
      {"slack", {"acme", "slack", "C0123456789", "bot", payload}},
      {"discord", {"acme", "discord", "channels/123456789012345678", "dbot", payload}},
      {"line", {"acme", "line", "U0123456789abcdef0123456789abcdef", "line", payload}},
      {"webhook", {"acme", "webhook", "https://hooks.example.com/deep", "hooks", payload}}};
  std::map<std::string, std::string> ids;
  {
    auto store = storage::OpenRocksQueueStore(options_.store, ToUnixMillis(clock_.WallNow()));
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    for (const auto& [platform, d] : in_store) {
      auto stored = (*store)->Enqueue(d, ToUnixMillis(clock_.WallNow()));
      ASSERT_TRUE(stored.has_value()) << stored.error().ToString();
      ids[platform] = stored->id;
    }
    ASSERT_TRUE((*store)->Close().ok());
  }
  StartService();
  WaitForStats([](const json& s) { return s["dead"] == 3 && s["delivered"] == 1; });
  const std::vector<std::string> sent = SentBodies();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0], payload);

  for (const auto& [platform, id] : ids) {
    TestResponse shown = HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries/" + id);
    ASSERT_EQ(shown.status, 200) << platform;
    const json d = shown.Json();
    EXPECT_EQ(d["payload"], payload) << platform << ": shown as its text, not a tree";
    EXPECT_EQ(d["state"], platform == "webhook" ? "delivered" : "dead") << platform;
    if (platform != "webhook") {
      EXPECT_NE(d["reason"].get<std::string>().find("deeper than 512"), std::string::npos)
          << platform << ": " << d["reason"];
    }
  }
  const json listed = HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries?limit=1000").Json();
  EXPECT_EQ(listed["deliveries"].size(), 4u);
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries?state=dead")
                .Json()["deliveries"]
                .size(),
            3u);

  TestResponse one =
      HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/" + ids["slack"] + "/replay");
  EXPECT_EQ(one.status, 200) << one.body;
  WaitForStats([](const json& s) { return s["dead"] == 3 && s["queued"] == 0; });
  // A replay by filter is a job: it answers at once, then replays on the storage threads.
  TestResponse all = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/replay",
                                json{{"state", "dead"}}.dump());
  ASSERT_EQ(all.status, 202) << all.body;
  const std::string job = "/v1/jobs/" + all.Json()["job"].get<std::string>();
  json done;
  for (int waited = 0; waited < 20'000 && done["state"] != "done"; waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done = HttpCallAs(kAdminToken, port_, "GET", job).Json();
  }
  ASSERT_EQ(done["state"], "done") << done.dump();
  EXPECT_EQ(done["replayed"], 3) << done.dump();
  const json stats = WaitForStats([](const json& s) { return s["dead"] == 3 && s["queued"] == 0; });
  EXPECT_EQ(stats["delivered"], 1) << stats.dump();
  EXPECT_EQ(SentBodies().size(), 1u) << "no adapter built a request from a deep payload";
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "GET", "/healthz").status, 200);
}

// Verifies that intake refuses a 100,000-deep payload on every platform, single and in a batch,
// with a 400 naming payload, stores nothing, and goes on answering.
TEST_F(DeepPayloadTest, IntakeRefusesDeepPayloads) {
  StartService();
  const std::string payload = DeepPayload();
  const std::vector<json> items = {{{"tenant", "acme"},
                                    {"platform", "slack"},
                                    {"destination", "C0123456789"},
                                    {"credential", "bot"}},
                                   {{"tenant", "acme"},
                                    {"platform", "discord"},
                                    {"destination", "channels/123456789012345678"},
                                    {"credential", "dbot"}},
                                   {{"tenant", "acme"},
                                    {"platform", "line"},
                                    {"destination", "U0123456789abcdef0123456789abcdef"},
                                    {"credential", "line"}},
                                   {{"tenant", "acme"},
                                    {"platform", "webhook"},
                                    {"destination", "https://hooks.example.com/x"},
                                    {"credential", "hooks"}}};
  std::string batch = "{\"deliveries\":[";
  for (const json& item : items) {
    std::string text = item.dump();
    text.insert(text.size() - 1, ",\"payload\":" + payload);
    TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries", text);
    EXPECT_EQ(r.status, 400) << item["platform"] << ": " << r.body.substr(0, 200);
    EXPECT_EQ(r.Json()["field"], "payload") << r.body.substr(0, 200);
    batch += (batch.back() == '[' ? "" : ",") + text;
  }
  batch += "]}";
  TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/batch", batch);
  ASSERT_EQ(r.status, 207) << r.body.substr(0, 200);
  for (const json& result : r.Json()["results"]) {
    EXPECT_EQ(result["status"], 400) << result.dump();
    EXPECT_EQ(result["field"], "payload") << result.dump();
  }
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "GET", "/healthz").status, 200);
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries").Json()["deliveries"].size(),
            0u);
}

// Verifies that the other JSON bodies the API reads (replay, enable, the admin routes) survive a
// value nested 100,000 deep: a 4xx with the envelope, and the service answers afterwards.
TEST_F(DeepPayloadTest, OtherBodiesRefuseDeepValues) {
  StartService();
  const std::string deep = std::string(kDepth, '[') + std::string(kDepth, ']');
  const std::vector<std::pair<std::string, std::string>> admin = {
      {"X-Admin-Token", "test-admin-token"}};
  struct Case {
    std::string method, target, body;
    bool admin = false;
  };
  const std::vector<Case> cases = {
      {"POST", "/v1/deliveries/replay", "{\"tenant\":" + deep + "}"},
      {"POST", "/v1/deliveries/replay", deep},
      {"POST", "/v1/destinations/enable", "{\"key\":" + deep + "}"},
      {"PUT", "/api/admin/tenants/acme/rate_limits", "{\"rate_limits\":" + deep + "}", true},
      {"PUT", "/api/admin/tenants/acme/rate_limits",
       "{\"rate_limits\":{\"tenant_egress\":" + deep + "}}", true},
      {"PUT", "/api/admin/tenants/acme/rate_limits",
       "{\"rate_limits\":{\"tenant_egress\":{\"limit\":" + deep + "}}}", true},
      {"PUT", "/api/admin/tenants/acme/credentials/x",
       "{\"platform\":\"webhook\",\"secrets\":" + deep + "}", true},
      {"PUT", "/api/admin/tenants/acme/credentials/x", "{\"platform\":" + deep + "}", true},
      {"POST", "/v1/deliveries", deep},
  };
  for (const Case& c : cases) {
    TestResponse r =
        HttpCallAs(kAdminToken, port_, c.method, c.target, c.body,
                   c.admin ? admin : std::vector<std::pair<std::string, std::string>>{});
    const std::string what = c.method + " " + c.target + " " + c.body.substr(0, 40);
    EXPECT_GE(r.status, 400) << what << ": " << r.body.substr(0, 200);
    EXPECT_LT(r.status, 500) << what << ": " << r.body.substr(0, 200);
    EXPECT_TRUE(r.Json().contains("error")) << what << ": " << r.body.substr(0, 200);
    ASSERT_EQ(HttpCallAs(kAdminToken, port_, "GET", "/healthz").status, 200) << "after " << what;
  }
}

}  // namespace
}  // namespace egress::service
