// Issue #14 part A: who may do what. A real Service on loopback (scripted transport: nothing
// leaves the process), tenants acme (A) and globex (B) with one API key each, and the admin.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include "adapters/api_key.h"
#include "dispatcher/service/service.h"
#include "storage/delivery.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "auth-test-admin-token-0123";
constexpr char kKeyA[] = "acme-api-key-0123456789abcdef";
constexpr char kKeyB[] = "globex-api-key-0123456789abcdef";
constexpr char kWrongKey[] = "not-a-key-of-anyone-0123456789";
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// Who calls, in the order of the matrix's columns.
enum Caller { kNoKey, kWrong, kTenantA, kTenantB, kAdmin, kCallers };
const char* const kCallerNames[] = {"no key", "wrong key", "tenant A", "tenant B", "admin"};

// Any status that shows the request reached its handler and the delivery (not refused by
// authentication or scope): 200, 202 or 409 (a state the action does not apply to).
constexpr int kReached = -1;

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.http.listen = {.host = "127.0.0.1", .port = 0};
    options_.admin_token = kAdminToken;
    options_.store.path = dir_.Sub("store");
    options_.credentials = {
        {"acme", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}},
        {"globex", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}},
        {"globex", {.name = "globex-only", .platform = "webhook", .secrets = {kSecret}}}};
    options_.auth.api_keys = {{"acme", adapters::ApiKeyDigest(kKeyA)},
                              {"globex", adapters::ApiKeyDigest(kKeyB)}};
  }

  void StartService() {
    auto transport = std::make_unique<adapters::ScriptedTransport>(svc_.io());
    // Every attempt fails for a while: deliveries stay deferred (replayable, cancellable).
    transport->SetFallback(adapters::HttpResponse{.status = 503});
    Status started = svc_.Start(options_, std::move(transport));
    ASSERT_TRUE(started.ok()) << started.ToString();
    port_ = svc_.port();
  }

  void StopService() { svc_.Stop(); }

  void TearDown() override { StopService(); }

  TestResponse Call(Caller who, const std::string& method, const std::string& target,
                    const std::string& body = "") {
    switch (who) {
      case kNoKey:
        return HttpCall(port_, method, target, body);
      case kWrong:
        return HttpCallAs(kWrongKey, port_, method, target, body);
      case kTenantA:
        return HttpCallAs(kKeyA, port_, method, target, body);
      case kTenantB:
        return HttpCallAs(kKeyB, port_, method, target, body);
      default:
        return HttpCallAs(kAdminToken, port_, method, target, body);
    }
  }

  static json Delivery(const std::string& tenant, const std::string& credential = "hooks") {
    json d = {{"platform", "webhook"},
              {"destination", "https://receiver.example/hooks/" + tenant},
              {"credential", credential},
              {"payload", {{"event", "x"}}}};
    if (!tenant.empty()) {
      d["tenant"] = tenant;
    }
    return d;
  }

  std::string Post(Caller who, const json& d) {
    TestResponse r = Call(who, "POST", "/v1/deliveries", d.dump());
    EXPECT_EQ(r.status, 202) << r.body;
    return r.Json().value("id", "");
  }

  std::string Metrics() {
    return svc_.OnLoop([&] { return svc_.service().metrics().Render(); });
  }

  TempDir dir_;
  SystemClock clock_;
  ServiceOptions options_;
  RunningService svc_{clock_};
  int port_ = 0;
};

struct Row {
  std::string method, target, body;
  int expect[kCallers];
};

// Verifies every route x {no key, wrong key, tenant A, tenant B, admin} gets the status of the
// issue's contract, and that each refusal is the contract's envelope.
TEST_F(AuthTest, EveryRouteByEveryCaller) {
  options_.auth.failure_budget = {1'000'000, 60'000, 1'000'000};  // the wrong key is sent often
  StartService();
  const std::string a = Post(kAdmin, Delivery("acme"));
  Post(kAdmin, Delivery("globex"));
  const std::string dest_a =
      storage::DestinationKeyOf("webhook", "acme", "hooks", "https://receiver.example/hooks/acme");
  // A's replay job, to be looked at by everyone.
  TestResponse job = Call(kTenantA, "POST", "/v1/deliveries/replay", R"({"state":"dead"})");
  ASSERT_EQ(job.status, 202) << job.body;
  const std::string job_a = job.Json().value("job", "");
  const std::string admin_body = json{{"api_keys", {kKeyA}}}.dump();

  const std::vector<Row> rows = {
      {"GET", "/healthz", "", {200, 200, 200, 200, 200}},
      {"GET", "/readyz", "", {200, 200, 200, 200, 200}},
      {"GET", "/metrics", "", {401, 401, 403, 403, 200}},
      {"POST", "/v1/deliveries", Delivery("acme").dump(), {401, 401, 202, 403, 202}},
      {"POST",
       "/v1/deliveries/batch",
       json{{"deliveries", {Delivery("acme")}}}.dump(),
       {401, 401, 202, 403, 202}},
      {"GET", "/v1/deliveries", "", {401, 401, 200, 200, 200}},
      {"GET", "/v1/deliveries?tenant=acme", "", {401, 401, 200, 403, 200}},
      {"GET", "/v1/deliveries/" + a, "", {401, 401, 200, 404, 200}},
      {"POST", "/v1/deliveries/" + a + "/replay", "", {401, 401, kReached, 404, kReached}},
      {"DELETE", "/v1/deliveries/" + a, "", {401, 401, kReached, 404, kReached}},
      {"POST",
       "/v1/deliveries/replay",
       R"({"state":"dead","dry_run":true})",
       {401, 401, 200, 200, 200}},
      {"POST",
       "/v1/deliveries/replay",
       R"({"state":"dead","tenant":"acme","dry_run":true})",
       {401, 401, 200, 403, 200}},
      {"GET", "/v1/jobs/" + job_a, "", {401, 401, 200, 404, 200}},
      {"GET", "/v1/stats", "", {401, 401, 200, 200, 200}},
      {"GET", "/v1/destinations", "", {401, 401, 200, 200, 200}},
      {"GET", "/v1/destinations?tenant=acme", "", {401, 401, 200, 403, 200}},
      {"POST", "/v1/destinations/enable", json{{"key", dest_a}}.dump(), {401, 401, 200, 404, 200}},
      {"GET", "/api/admin/tenants/acme/rate_limits", "", {401, 401, 403, 403, 200}},
      {"PUT",
       "/api/admin/tenants/acme/rate_limits",
       R"({"rate_limits":{}})",
       {401, 401, 403, 403, 200}},
      {"PUT",
       "/api/admin/tenants/acme/credentials/extra",
       json{{"platform", "webhook"}, {"secret", kSecret}}.dump(),
       {401, 401, 403, 403, 200}},
      {"PUT", "/api/admin/tenants/acme/api_keys", admin_body, {401, 401, 403, 403, 200}},
      {"GET", "/v1/no-such-route", "", {401, 401, 404, 404, 404}},
  };
  for (const Row& row : rows) {
    for (int who = 0; who < kCallers; ++who) {
      TestResponse r = Call(static_cast<Caller>(who), row.method, row.target, row.body);
      const std::string what =
          row.method + " " + row.target + " by " + kCallerNames[who] + ": " + r.body;
      if (row.expect[who] == kReached) {
        EXPECT_TRUE(r.status == 200 || r.status == 202 || r.status == 409) << r.status << what;
      } else {
        EXPECT_EQ(r.status, row.expect[who]) << what;
      }
      if (r.status == 401) {
        EXPECT_EQ(r.Json().value("error", ""), "unauthorized") << what;
        EXPECT_EQ(r.Header("WWW-Authenticate"), "Bearer") << what;
      }
      if (r.status == 403) {
        EXPECT_EQ(r.Json().value("error", ""), "forbidden") << what;
      }
      EXPECT_EQ(r.body.find(kKeyA), std::string::npos) << what;
      EXPECT_EQ(r.body.find(kWrongKey), std::string::npos) << what;
    }
  }
}

// Verifies A cannot see, replay, cancel or sign with anything of B's: lists and destinations
// hold only A's work, B's ids are absent, and a delivery with B's tenant or B's credential is
// refused without a write.
TEST_F(AuthTest, TenantSeesAndSignsOnlyItsOwn) {
  StartService();
  // A delivery is deferred once its first attempt is over; until then it is queued or in flight.
  auto wait_deferred = [&](const std::string& id) {
    for (int waited = 0; waited < 10'000; waited += 10) {
      if (Call(kAdmin, "GET", "/v1/deliveries/" + id).Json().value("state", "") == "deferred") {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  const std::string b = Post(kTenantB, Delivery("globex"));
  const std::string a = Post(kTenantA, Delivery(""));  // tenant taken from the key
  EXPECT_EQ(Call(kAdmin, "GET", "/v1/deliveries/" + a).Json().value("tenant", ""), "acme");

  for (const char* target : {"/v1/deliveries", "/v1/destinations"}) {
    const json listed = Call(kTenantA, "GET", target).Json();
    const json& items =
        listed.contains("deliveries") ? listed["deliveries"] : listed["destinations"];
    ASSERT_FALSE(items.empty()) << target;
    for (const json& item : items) {
      EXPECT_EQ(item.value("tenant", ""), "acme") << target << ": " << item.dump();
    }
  }
  EXPECT_EQ(Call(kTenantA, "GET", "/v1/deliveries/" + b).status, 404);
  EXPECT_EQ(Call(kTenantA, "POST", "/v1/deliveries/" + b + "/replay").status, 404);
  EXPECT_EQ(Call(kTenantA, "DELETE", "/v1/deliveries/" + b).status, 404);
  wait_deferred(b);
  EXPECT_EQ(Call(kAdmin, "GET", "/v1/deliveries/" + b).Json().value("state", ""), "deferred")
      << "B's delivery was touched";

  // Signing with B's secret: B's tenant is forbidden, B's credential under A is unknown.
  TestResponse as_b = Call(kTenantA, "POST", "/v1/deliveries", Delivery("globex").dump());
  EXPECT_EQ(as_b.status, 403);
  EXPECT_EQ(as_b.Json().value("error", ""), "forbidden");
  TestResponse b_cred =
      Call(kTenantA, "POST", "/v1/deliveries", Delivery("acme", "globex-only").dump());
  EXPECT_EQ(b_cred.status, 422);
  EXPECT_EQ(b_cred.Json().value("error", ""), "unknown_credential");
  json batch = {{"deliveries", {Delivery("acme"), Delivery("globex")}}};
  EXPECT_EQ(Call(kTenantA, "POST", "/v1/deliveries/batch", batch.dump()).status, 403);
  const json all = Call(kAdmin, "GET", "/v1/deliveries").Json()["deliveries"];
  EXPECT_EQ(all.size(), 2u) << "a refused request stored something: " << all.dump();

  // A's replay-by-filter job sees A's work only; its stats are A's.
  wait_deferred(a);
  TestResponse dry =
      Call(kTenantA, "POST", "/v1/deliveries/replay", R"({"state":"deferred","dry_run":true})");
  EXPECT_EQ(dry.Json().value("matched", -1), 1) << dry.body;
  const json stats = Call(kTenantA, "GET", "/v1/stats").Json();
  EXPECT_EQ(stats.value("tenant", ""), "acme");
  EXPECT_EQ(stats.value("backlog", -1), 1) << stats.dump();
}

// Verifies PUT /api/admin/tenants/{t}/api_keys replaces the keys at once and for good (stored as
// digests: the plain key is nowhere in the store's files), and refuses a key another tenant has.
TEST_F(AuthTest, AdminReplacesApiKeysDurably) {
  StartService();
  const std::string fresh = "acme-rotated-key-abcdef0123456789";
  TestResponse put =
      Call(kAdmin, "PUT", "/api/admin/tenants/acme/api_keys", json{{"api_keys", {fresh}}}.dump());
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.Json().value("api_keys", 0), 1);
  EXPECT_EQ(put.body.find(fresh), std::string::npos);
  EXPECT_EQ(Call(kTenantA, "GET", "/v1/stats").status, 401);
  EXPECT_EQ(HttpCallAs(fresh, port_, "GET", "/v1/stats").status, 200);
  // B's key for acme: refused, nothing changes.
  TestResponse taken =
      Call(kAdmin, "PUT", "/api/admin/tenants/acme/api_keys", json{{"api_keys", {kKeyB}}}.dump());
  EXPECT_EQ(taken.status, 409) << taken.body;
  EXPECT_EQ(Call(kTenantB, "GET", "/v1/stats").status, 200);
  for (const json& bad : {json{{"api_keys", {"short"}}}, json{{"api_keys", {"sha256:00"}}},
                          json{{"api_keys", "x"}}, json{{"api_keys", {"with space 0123456789"}}}}) {
    TestResponse r = Call(kAdmin, "PUT", "/api/admin/tenants/acme/api_keys", bad.dump());
    EXPECT_EQ(r.status, 400) << bad.dump();
    EXPECT_EQ(r.body.find("with space"), std::string::npos) << "the entry is echoed";
  }

  StopService();
  StartService();
  EXPECT_EQ(HttpCallAs(fresh, port_, "GET", "/v1/stats").status, 200) << "not persisted";
  EXPECT_EQ(Call(kTenantA, "GET", "/v1/stats").status, 401) << "the config's key came back";
  StopService();
  EXPECT_EQ(AllFileBytes(dir_.Sub("store")).find(fresh), std::string::npos) << "key at rest";
}

// Verifies the brute-force rule: past the budget of failed attempts an address is answered 429
// with Retry-After, even with a right key, and each refusal is counted.
TEST_F(AuthTest, FailureBudgetAnswers429) {
  options_.auth.failure_budget = {3, 60'000, 3};
  StartService();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Call(kWrong, "GET", "/v1/stats").status, 401) << i;
  }
  EXPECT_EQ(Call(kNoKey, "GET", "/v1/stats").status, 401) << "a missing key counts no attempt";
  TestResponse blocked = Call(kTenantA, "GET", "/v1/stats");
  EXPECT_EQ(blocked.status, 429) << blocked.body;
  EXPECT_EQ(blocked.Json().value("error", ""), "too_many_auth_failures");
  const int retry = std::atoi(blocked.Header("Retry-After").c_str());
  EXPECT_GE(retry, 1);
  EXPECT_LE(retry, 20);
  EXPECT_EQ(Call(kNoKey, "GET", "/healthz").status, 200) << "health stays open";
  const std::string metrics = Metrics();
  EXPECT_NE(metrics.find("relay_egress_auth_failures_total{reason=\"unknown\"} 3"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("relay_egress_auth_failures_total{reason=\"over_budget\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("relay_egress_auth_failures_total{reason=\"missing\"} 1"),
            std::string::npos);
}

// Verifies server.trusted_proxies: behind a trusted proxy (here: loopback) the failure budget
// counts the client X-Forwarded-For names, so one client's failures do not shut out another
// behind the same proxy; a hop the client wrote itself left of the real one changes nothing.
// Without the trust, the header is ignored and the proxy is the one client.
TEST_F(AuthTest, FailureBudgetCountsTheClientATrustedProxyNames) {
  options_.auth.failure_budget = {3, 60'000, 3};
  options_.http.trusted_proxies = *TrustedProxies::Parse({"127.0.0.0/8"});
  StartService();
  const auto as = [&](const char* key, const std::string& forwarded_for) {
    return HttpCall(
        port_, "GET", "/v1/stats", "",
        {{"Authorization", std::string("Bearer ") + key}, {"X-Forwarded-For", forwarded_for}});
  };
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(as(kWrongKey, "198.51.100.7, 203.0.113.5").status, 401) << i;
  }
  EXPECT_EQ(as(kKeyA, "203.0.113.5").status, 429);
  EXPECT_EQ(as(kKeyA, "6.6.6.6, 203.0.113.5").status, 429) << "a hop the client wrote";
  EXPECT_EQ(as(kKeyA, "203.0.113.6").status, 200) << "another client behind the proxy";
  StopService();

  options_.http.trusted_proxies = {};
  StartService();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(as(kWrongKey, "203.0.113." + std::to_string(10 + i)).status, 401) << i;
  }
  EXPECT_EQ(as(kKeyA, "203.0.113.99").status, 429) << "untrusted: the header is ignored";
}

// Sends `bytes` on a new loopback connection to `port` and reads until the server closes it;
// the HTTP status of the answer, or 0 when none came.
int RawStatus(int port, const std::string& bytes) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect({asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)}, ec);
  if (ec) {
    return -1;
  }
  asio::write(socket, asio::buffer(bytes), ec);
  std::string answer;
  char chunk[4096];
  for (;;) {
    const size_t n = socket.read_some(asio::buffer(chunk), ec);
    answer.append(chunk, n);
    if (ec || answer.find("\r\n\r\n") != std::string::npos) {
      break;
    }
  }
  return answer.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(answer.c_str() + 9) : 0;
}

// Verifies server.proxy_protocol: a trusted proxy's connections start with a PROXY header (v1
// here), and the failure budget counts the client it names: three wrong keys from one client
// lock out that client only, and an X-Forwarded-For the client wrote changes nothing (the
// client is not a trusted proxy). A trusted peer's connection without the header is closed
// unanswered.
TEST_F(AuthTest, ProxyProtocolNamesTheClientForTheFailureBudget) {
  options_.auth.failure_budget = {3, 60'000, 3};
  options_.http.trusted_proxies = *TrustedProxies::Parse({"127.0.0.0/8"});
  options_.http.proxy_protocol = true;
  StartService();
  const auto from = [&](const std::string& client, const char* key,
                        const std::string& extra_header = "") {
    return RawStatus(port_, "PROXY TCP4 " + client + " 127.0.0.1 40000 443\r\n" +
                                "GET /v1/stats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                key + "\r\n" + extra_header + "Connection: close\r\n\r\n");
  };
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(from("203.0.113.5", kWrongKey), 401) << i;
  }
  EXPECT_EQ(from("203.0.113.5", kKeyA), 429);
  EXPECT_EQ(from("203.0.113.5", kKeyA, "X-Forwarded-For: 198.51.100.9\r\n"), 429)
      << "a header the client wrote";
  EXPECT_EQ(from("203.0.113.6", kKeyA), 200) << "another client behind the proxy";
  EXPECT_EQ(RawStatus(port_, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), 0)
      << "no PROXY header from a trusted peer: closed unanswered";
  EXPECT_EQ(RawStatus(port_, "PROXY TCP4 1.2.3\r\nGET /healthz HTTP/1.1\r\n\r\n"), 0);
}

// Verifies the admin token works as X-Admin-Token and as a Bearer, a tenant key never as
// X-Admin-Token, and a service whose admin token is also a tenant's key does not start.
TEST_F(AuthTest, AdminTokenBothWaysAndNeverATenantKey) {
  StartService();
  EXPECT_EQ(HttpCall(port_, "GET", "/metrics", "", {{"X-Admin-Token", kAdminToken}}).status, 200);
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "GET", "/metrics").status, 200);
  EXPECT_EQ(HttpCall(port_, "GET", "/v1/stats", "", {{"X-Admin-Token", kKeyA}}).status, 401);
  EXPECT_EQ(
      HttpCall(port_, "GET", "/v1/stats", "", {{"Authorization", "bearer  " + std::string(kKeyA)}})
          .status,
      200)
      << "the scheme is case-insensitive";
  EXPECT_EQ(HttpCall(port_, "GET", "/v1/stats", "", {{"Authorization", "Basic abc"}}).status, 401);
  StopService();
  options_.auth.api_keys.push_back({"acme", adapters::ApiKeyDigest(kAdminToken)});
  Status refused = svc_.Start(options_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message().find(kAdminToken), std::string::npos);
}

// Verifies the admin token's shape: one under 16 bytes of visible ASCII still starts the
// service (with a warning: an upgrade must not stop a deployment whose token predates the rule)
// and works; one with a byte that is not visible ASCII, or over 256 bytes, is refused at start
// without being echoed; its "sha256:" digest works as the token itself does, so a config file
// need not hold the token.
TEST_F(AuthTest, AdminTokenIsLongOrGivenAsItsDigest) {
  options_.admin_token = "short-token";
  StartService();
  EXPECT_EQ(HttpCallAs("short-token", port_, "GET", "/metrics").status, 200);
  EXPECT_EQ(HttpCallAs("short-tokex", port_, "GET", "/metrics").status, 401);
  StopService();
  for (const std::string& bad : {std::string("short token"), std::string(257, 'a')}) {
    options_.admin_token = bad;
    Status refused = svc_.Start(options_);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("server.admin_token"), std::string::npos) << refused.message();
    EXPECT_EQ(refused.message().find(bad), std::string::npos) << refused.message();
  }
  options_.admin_token = adapters::ApiKeyDigestText(adapters::ApiKeyDigest(kAdminToken));
  StartService();
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "GET", "/metrics").status, 200);
  EXPECT_EQ(HttpCallAs(options_.admin_token, port_, "GET", "/metrics").status, 401);
}

// Verifies server.auth = "off": without a key every tenant's work is open (the API of old), the
// admin routes still need the admin token, and a presented key still confines.
TEST_F(AuthTest, AuthOffKeepsTheOpenApiOnLoopback) {
  options_.auth.required = false;
  StartService();
  Post(kNoKey, Delivery("globex"));
  EXPECT_EQ(Call(kNoKey, "GET", "/v1/deliveries").Json()["deliveries"].size(), 1u);
  EXPECT_EQ(Call(kNoKey, "GET", "/metrics").status, 200);
  EXPECT_EQ(Call(kNoKey, "GET", "/api/admin/tenants/acme/rate_limits").status, 401);
  EXPECT_EQ(Call(kTenantA, "GET", "/v1/deliveries").Json()["deliveries"].size(), 0u);
}

}  // namespace
}  // namespace egress::service
