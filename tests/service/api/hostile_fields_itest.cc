// Every route and every field the API handlers read, sent each wrong type (number, null, bool,
// array, object, a 70 kB string, a string with a NUL): each is a 4xx with the error envelope,
// nothing is stored, and the service goes on answering. A real Service (RocksDB on disk, the
// real adapters) over loopback HTTP; attempts go to a ScriptedTransport, never the network.

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/service/service.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kAdminToken[] = "test-admin-token";

// The wrong values every field is sent, by name.
std::vector<std::pair<std::string, json>> WrongTypes() {
  return {{"number", 42},
          {"null", nullptr},
          {"bool", true},
          {"array", json::array({1, "a"})},
          {"object", json{{"a", 1}}},
          {"70 kB string", std::string(70'000, 'x')},
          {"NUL", std::string("a\0b", 3)}};
}

// `all` less the kinds named in `except` (a field whose right type is among them).
std::vector<std::pair<std::string, json>> Except(std::vector<std::string> except) {
  std::vector<std::pair<std::string, json>> out;
  for (auto& [name, value] : WrongTypes()) {
    if (std::find(except.begin(), except.end(), name) == except.end()) {
      out.emplace_back(name, value);
    }
  }
  return out;
}

class HostileFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServiceOptions o;
    o.http.listen = {.host = "127.0.0.1", .port = 0};
    o.admin_token = kAdminToken;
    o.store.path = dir_.Sub("store");
    o.credentials.push_back(
        {"acme", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}});
    o.credentials.push_back({"acme", {.name = "bot", .platform = "slack", .token = "xoxb-acme"}});
    Status started = svc_.Start(o, std::make_unique<adapters::ScriptedTransport>(svc_.io()));
    ASSERT_TRUE(started.ok()) << started.ToString();
    port_ = svc_.port();
  }

  void TearDown() override { svc_.Stop(); }

  // Sends the request; expects a 4xx with the error envelope, then a live service.
  void ExpectRefused(const std::string& method, const std::string& target, const std::string& body,
                     const std::string& what, bool admin = false) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (admin) {
      headers.emplace_back("X-Admin-Token", kAdminToken);
    }
    TestResponse r = HttpCallAs(kAdminToken, port_, method, target, body, headers);
    const json envelope = r.Json();
    EXPECT_TRUE(r.status >= 400 && r.status < 500 && envelope.is_object() &&
                envelope.contains("error") && envelope["error"].is_string() &&
                envelope.contains("message"))
        << what << ": " << r.status << " " << r.body.substr(0, 300);
    ++cases_;
    ASSERT_EQ(HttpCallAs(kAdminToken, port_, "GET", "/healthz").status, 200) << "after " << what;
  }

  // For each field of `base` in `fields` (a JSON pointer without its leading '/') and each of
  // its wrong values: `base` with the field replaced is refused.
  void EachFieldRefused(
      const std::string& method, const std::string& target, const json& base,
      const std::vector<std::pair<std::string, std::vector<std::pair<std::string, json>>>>& fields,
      bool admin = false) {
    for (const auto& [field, values] : fields) {
      for (const auto& [kind, value] : values) {
        json body = base;
        body[json::json_pointer("/" + field)] = value;
        ExpectRefused(method, target, body.dump(),
                      method + " " + target + " " + field + ": " + kind, admin);
      }
    }
  }

  // Each wrong type as the whole body.
  void BodyRefused(const std::string& method, const std::string& target, bool admin = false) {
    for (const auto& [kind, value] : Except({"object"})) {
      ExpectRefused(method, target, value.dump(), method + " " + target + " body: " + kind, admin);
    }
    ExpectRefused(method, target, "{not json", method + " " + target + " body: not JSON", admin);
    ExpectRefused(method, target, std::string("{\"a\":\"\0\"}", 9),
                  method + " " + target + " body: raw NUL", admin);
  }

  json Webhook() const {
    return {{"tenant", "acme"},
            {"platform", "webhook"},
            {"destination", "https://hooks.example.com/x"},
            {"credential", "hooks"},
            {"payload", {{"event", "message.created"}}}};
  }

  TempDir dir_;
  SystemClock clock_;
  RunningService svc_{clock_};
  int port_ = 0;
  int cases_ = 0;
};

// The optional string fields: null means absent (docs/api.md), so it is no wrong type for them.
const std::vector<std::string> kOptional = {"null"};

// Verifies every field of a single intake and of a batch item, and the bodies themselves: 4xx
// each (a batch answers 207 with the item's 4xx), nothing stored, the service alive.
TEST_F(HostileFieldsTest, IntakeFields) {
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, json>>>> fields = {
      {"tenant", WrongTypes()},
      {"platform", WrongTypes()},
      {"destination", WrongTypes()},
      {"credential", WrongTypes()},
      {"payload", Except({"object"})},
      {"idempotency_key", Except(kOptional)},
      {"ordering_key", Except(kOptional)},
      {"cost",
       {{"string", "5"},
        {"bool", true},
        {"array", json::array({1})},
        {"object", json{{"a", 1}}},
        {"0", 0},
        {"negative", -1},
        {"fraction", 1.5},
        {"2^64", json::parse("18446744073709551616")},
        {"over the cap", 1'000'001},
        {"70 kB string", std::string(70'000, '1')},
        {"NUL", std::string("1\0", 2)}}},
  };
  EachFieldRefused("POST", "/v1/deliveries", Webhook(), fields);
  BodyRefused("POST", "/v1/deliveries");

  // A batch: the item's 4xx in a 207, for each field; the batch body itself refused whole.
  for (const auto& [field, values] : fields) {
    for (const auto& [kind, value] : values) {
      json item = Webhook();
      item[field] = value;
      const json batch = {{"deliveries", {item}}};
      TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/batch", batch.dump());
      const std::string what = "batch item " + field + ": " + kind;
      ASSERT_EQ(r.status, 207) << what << ": " << r.body.substr(0, 300);
      const json result = r.Json()["results"][0];
      EXPECT_GE(result["status"].get<int>(), 400) << what << ": " << r.body.substr(0, 300);
      EXPECT_LT(result["status"].get<int>(), 500) << what << ": " << r.body.substr(0, 300);
      EXPECT_TRUE(result["error"].is_string()) << what << ": " << r.body.substr(0, 300);
    }
  }
  for (const auto& [kind, value] : WrongTypes()) {
    TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/batch",
                                json{{"deliveries", value}}.dump());
    EXPECT_EQ(r.status, value.is_array() ? 207 : 400) << "deliveries: " << kind << ": " << r.body;
    if (value.is_array()) {
      // [1, "a"]: two items that are not objects, each refused.
      EXPECT_EQ(r.Json()["results"][0]["status"], 400) << r.body;
      EXPECT_EQ(r.Json()["results"][1]["status"], 400) << r.body;
    }
  }
  BodyRefused("POST", "/v1/deliveries/batch");

  const json stats = HttpCallAs(kAdminToken, port_, "GET", "/v1/stats").Json();
  EXPECT_EQ(stats["accepted"], 0) << stats.dump();
  EXPECT_EQ(stats["queued"], 0) << stats.dump();
  EXPECT_GT(cases_, 70);
}

// Verifies every field of a replay-matching request, the key of enabling a destination, and the
// ids of the per-delivery routes.
TEST_F(HostileFieldsTest, SteeringFields) {
  const json base = {{"state", "dead"}};
  EachFieldRefused("POST", "/v1/deliveries/replay", base,
                   {{"state", WrongTypes()},
                    {"tenant", WrongTypes()},
                    {"platform", WrongTypes()},
                    {"destination", WrongTypes()},
                    {"reason", WrongTypes()},
                    {"dry_run", Except({"bool"})}});
  BodyRefused("POST", "/v1/deliveries/replay");
  EachFieldRefused("POST", "/v1/destinations/enable", json::object(), {{"key", WrongTypes()}});
  BodyRefused("POST", "/v1/destinations/enable");
  for (const std::string& id :
       std::vector<std::string>{"%00", "a%00b", std::string(7000, 'x'), "%FF%FE", "..", "null"}) {
    ExpectRefused("GET", "/v1/deliveries/" + id, "", "GET id " + id.substr(0, 20));
    ExpectRefused("DELETE", "/v1/deliveries/" + id, "", "DELETE id " + id.substr(0, 20));
    ExpectRefused("POST", "/v1/deliveries/" + id + "/replay", "", "replay id " + id.substr(0, 20));
  }
}

// Verifies the query parameters of the list and of the destinations: each wrong value is a 400
// naming the parameter (a 70 kB one is over the HTTP server's header limit: its 400).
TEST_F(HostileFieldsTest, QueryParameters) {
  const std::string big(70'000, 'x');
  const std::vector<std::pair<std::string, std::vector<std::string>>> list = {
      {"state", {"5", "null", "true", "%5B1%5D", "%7B%7D", big, "%00", "dead%00"}},
      {"limit",
       {"abc", "null", "true", "%5B1%5D", "%7B%7D", big, "%00", "0", "-1", "1001", "1.5",
        "99999999999999999999", "1%00"}},
      {"since",
       {"abc", "null", "true", "%5B1%5D", "%7B%7D", big, "%00", "1e999", "99999999999999999999"}},
      {"until", {"abc", "null", "true", "%5B1%5D", "%7B%7D", big, "%00", "1e999"}},
      {"tenant", {big, "%00", "acme%00"}},
      {"platform", {"5", "null", "true", "%5B1%5D", "%7B%7D", big, "%00", "webhook%00"}},
      {"destination", {big, "%00"}},
      {"reason", {big, "%00"}},
      {"cursor", {big, "%00"}},
  };
  for (const auto& [param, values] : list) {
    for (const std::string& value : values) {
      ExpectRefused("GET", "/v1/deliveries?" + param + "=" + value, "",
                    "list " + param + "=" + value.substr(0, 20));
    }
  }
  const std::vector<std::pair<std::string, std::vector<std::string>>> destinations = {
      {"tenant", {big, "%00"}},
      {"platform", {"5", "null", "true", "%5B1%5D", "%7B%7D", big, "%00"}},
  };
  for (const auto& [param, values] : destinations) {
    for (const std::string& value : values) {
      ExpectRefused("GET", "/v1/destinations?" + param + "=" + value, "",
                    "destinations " + param + "=" + value.substr(0, 20));
    }
  }
}

// Verifies every field of the admin routes (rate limits, credentials) and their path segments.
TEST_F(HostileFieldsTest, AdminFields) {
  const std::string limits = "/api/admin/tenants/acme/rate_limits";
  EachFieldRefused("PUT", limits, json::object(), {{"rate_limits", Except({"object"})}}, true);
  const json budget = {{"scale_ms", 1000}, {"limit", 10}, {"burst", 2}};
  EachFieldRefused("PUT", limits, {{"rate_limits", json::object()}},
                   {{"rate_limits/webhook_destination", Except({"object"})}}, true);
  const std::vector<std::pair<std::string, json>> numbers = {
      {"string", "5"},
      {"null", nullptr},
      {"bool", true},
      {"array", json::array({1})},
      {"object", json{{"a", 1}}},
      {"0", 0},
      {"negative", -1},
      {"fraction", 1.5},
      {"2^63-1", INT64_MAX},
      {"2^64", json::parse("18446744073709551616")},
      {"70 kB string", std::string(70'000, '1')},
      {"NUL", std::string("1\0", 2)}};
  for (const char* field : {"scale_ms", "limit", "burst"}) {
    for (const auto& [kind, value] : numbers) {
      json b = budget;
      b[field] = value;
      const json body = {{"rate_limits", {{"webhook_destination", b}}}};
      ExpectRefused("PUT", limits, body.dump(), std::string("rate_limits ") + field + ": " + kind,
                    true);
    }
  }
  BodyRefused("PUT", limits, true);

  const std::string cred = "/api/admin/tenants/acme/credentials/new";
  EachFieldRefused("PUT", cred, {{"platform", "slack"}, {"token", "xoxb-new"}},
                   {{"platform", WrongTypes()}, {"token", WrongTypes()}}, true);
  EachFieldRefused("PUT", cred, {{"platform", "slack"}, {"token", "xoxb-new"}},
                   {{"token", {{"CR LF", "xoxb-a\r\nX-Injected: 1"}, {"space", "xoxb a"}}}}, true);
  EachFieldRefused("PUT", cred, {{"platform", "webhook"}, {"secret", kSecret}},
                   {{"secret", WrongTypes()}}, true);
  EachFieldRefused("PUT", cred, {{"platform", "webhook"}, {"secrets", {kSecret}}},
                   {{"secrets", Except({"array"})}}, true);
  EachFieldRefused("PUT", cred, {{"platform", "webhook"}, {"secrets", {kSecret}}},
                   {{"secrets", {{"array of wrong types", json::array({1, nullptr, true})}}}},
                   true);
  BodyRefused("PUT", cred, true);

  // Path segments: a tenant or credential name no delivery could ever use.
  const json slack = {{"platform", "slack"}, {"token", "xoxb-new"}};
  for (const std::string& bad :
       std::vector<std::string>{"%00", "a%1Fb", "a%0Ab", std::string(3000, 'x')}) {
    ExpectRefused("PUT", "/api/admin/tenants/" + bad + "/credentials/new", slack.dump(),
                  "credential tenant " + bad.substr(0, 20), true);
    ExpectRefused("PUT", "/api/admin/tenants/acme/credentials/" + bad, slack.dump(),
                  "credential name " + bad.substr(0, 20), true);
    ExpectRefused("PUT", "/api/admin/tenants/" + bad + "/rate_limits", "{}",
                  "rate_limits tenant " + bad.substr(0, 20), true);
  }
  // The defaults are untouched and the credential was never registered.
  const json got =
      HttpCallAs(kAdminToken, port_, "GET", limits, "", {{"X-Admin-Token", kAdminToken}}).Json();
  EXPECT_EQ(got["rate_limits"]["webhook_destination"]["overridden"], false) << got.dump();
  json item = Webhook();
  item["credential"] = "new";
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries", item.dump()).status, 422);
}

}  // namespace
}  // namespace egress::service
