// Settings on the shared PostgreSQL store (issue 29): a real Service (the HTTP API over loopback,
// a scripted transport so nothing leaves the process) on a database of the test binary's
// PostgreSQL (tests/support/postgres_server.h), and beside it a second store object on the same
// database standing for another node, which writes settings as that node's admin API does (the
// keys and record kinds of dispatcher/service/tenant_settings.h). The service puts what the other
// node stores in force within about a second (SettingsReloader), in place of what it held, and
// keeps its settings while one stored setting does not parse.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/api_key.h"
#include "dispatcher/service/service.h"
#include "dispatcher/service/tenant_settings.h"
#include "storage/pg_queue_store.h"
#include "tests/support/http_client.h"
#include "tests/support/postgres_server.h"
#include "tests/support/running_service.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using adapters::ApiKeyDigest;
using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kSecretsKey[] = "8f2b0c5d7e1a4b6c9d3e5f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4";
constexpr char kConfigKey[] = "acme-config-key-0123456789";
// A liveness bound, not a speed claim: the reload runs every second.
constexpr auto kReloadBound = std::chrono::seconds(5);

json Delivery(const std::string& credential, int n) {
  return {{"tenant", "acme"},
          {"platform", "webhook"},
          {"destination", "https://hooks.example.com/h"},
          {"credential", credential},
          {"payload", {{"n", n}}}};
}

class PostgresSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PostgresServer::TestDatabase db = PostgresServer::FreshDatabase();
    if (db.not_installed) {
      GTEST_SKIP() << PostgresServer::kNotInstalled;
    }
    ASSERT_TRUE(db.error.empty()) << db.error;
    pg_.url = db.url;
    auto key = storage::SecretsKey::Parse(kSecretsKey);
    ASSERT_TRUE(key) << key.error().ToString();

    ServiceOptions o;
    o.http.listen = {.host = "127.0.0.1", .port = 0};
    o.admin_token = kAdminToken;
    o.store.path = dir_.Sub("node");
    o.store.secrets_key = *key;
    o.postgres = pg_;
    o.auth.api_keys = {{"acme", ApiKeyDigest(kConfigKey)}};
    // The tests try refused keys on purpose: not so many that the source is refused (429).
    o.auth.failure_budget = {1000, 60'000, 1000};
    o.credentials.push_back(
        {"acme", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}});
    config::TierConfig pro;
    pro.budgets.emplace_back(pacing::BudgetName::kTenantIntake, pacing::Budget{500, 1000, 50});
    o.quotas.tiers["pro"] = pro;
    o.quotas.tenant_tiers["acme"] = "pro";
    Status started =
        svc_.Start(std::move(o), std::make_unique<adapters::ScriptedTransport>(svc_.io()));
    ASSERT_TRUE(started.ok()) << started.ToString();

    storage::StoreOptions other;
    other.secrets_key = *key;
    auto opened = storage::OpenPostgresQueueStore(pg_, other, ToUnixMillis(clock_.WallNow()));
    ASSERT_TRUE(opened) << opened.error().ToString();
    other_ = std::move(*opened);
  }

  // What the other node's admin API does: stores `value` under `key` ("" deletes it).
  void OtherNodePuts(const std::string& key, const std::string& value) {
    Status put = other_->PutSetting(key, value);
    ASSERT_TRUE(put.ok()) << put.ToString();
  }

  // Waits until `pred`, run on the service's loop, holds; false after kReloadBound. Records the
  // wait in `property` (ms) when given.
  bool WaitOnLoop(const std::function<bool()>& pred, const std::string& property = "") {
    const SteadyTime start = clock_.Now();
    while (clock_.Now() - start < kReloadBound) {
      if (svc_.OnLoop(pred)) {
        if (!property.empty()) {
          RecordProperty(
              property,
              static_cast<int>(std::chrono::duration_cast<Millis>(clock_.Now() - start).count()));
        }
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::optional<std::string> TenantOfKey(const std::string& key) {
    return svc_.OnLoop([&] { return svc_.service().api_keys().TenantOf(ApiKeyDigest(key)); });
  }
  int StatsStatusWith(const std::string& key) {
    return HttpCallAs(key, svc_.port(), "GET", "/v1/stats").status;
  }
  TestResponse Post(const json& body) {
    return HttpCallAs(kAdminToken, svc_.port(), "POST", "/v1/deliveries", body.dump());
  }

  SystemClock clock_;
  TempDir dir_;
  storage::PostgresStoreOptions pg_;
  RunningService svc_{clock_};
  std::unique_ptr<storage::QueueStore> other_;  // the other node's store object
};

// Verifies that a pause another node stores holds this node's work within the bound (a delivery
// posted here waits, deferred with reason paused, and is not sent), and that once that node ends
// it, the delivery goes.
TEST_F(PostgresSettingsTest, PauseStoredOnAnotherNodeHoldsHereUntilEnded) {
  const std::string id = "pause_00000000000000a1";
  OtherNodePuts(PauseKey(id), json{{"id", id},
                                   {"tenant", "acme"},
                                   {"platform", "webhook"},
                                   {"reason", "drill"},
                                   {"created_ms", ToUnixMillis(clock_.WallNow())}}
                                  .dump());
  ASSERT_TRUE(
      WaitOnLoop([&] { return svc_.service().pauses().Find(id) != nullptr; }, "pause_seen_ms"));
  TestResponse r = Post(Delivery("hooks", 1));
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string delivery = r.Json().value("id", "");
  auto state_of = [&] {
    json d = HttpCallAs(kAdminToken, svc_.port(), "GET", "/v1/deliveries/" + delivery).Json();
    return d.value("state", "") + "/" + d.value("reason", "");
  };
  std::string state;
  for (int waited = 0; waited < 5'000 && state != "deferred/paused"; waited += 20) {
    state = state_of();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(state, "deferred/paused");
  json dests = HttpCallAs(kAdminToken, svc_.port(), "GET", "/v1/destinations").Json();
  ASSERT_EQ(dests["destinations"].size(), 1u) << dests.dump();
  EXPECT_EQ(dests["destinations"][0]["pause_id"], id) << dests.dump();

  OtherNodePuts(PauseKey(id), "");
  ASSERT_TRUE(WaitOnLoop([&] { return svc_.service().pauses().empty(); }));
  for (int waited = 0; waited < 10'000 && state != "delivered/"; waited += 20) {
    state = state_of();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(state, "delivered/");
}

// Verifies that a credential another node registers is usable here within the bound (a delivery
// with it is accepted and sent), and that once that node removes it, it is gone here too while
// the config's credentials stay.
TEST_F(PostgresSettingsTest, CredentialRegisteredOnAnotherNodeIsUsedAndRemovedHere) {
  TestResponse r = Post(Delivery("late", 1));
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(r.Json()["error"], "unknown_credential");

  const adapters::Credential late{.name = "late", .platform = "webhook", .secrets = {kSecret}};
  OtherNodePuts(CredentialKey("acme", "late"), CredentialToJson(late).dump());
  ASSERT_TRUE(
      WaitOnLoop([&] { return svc_.service().credentials().Find("acme", "late").has_value(); },
                 "credential_seen_ms"));
  r = Post(Delivery("late", 2));
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.Json().value("id", "");
  std::string state;
  for (int waited = 0; waited < 10'000 && state != "delivered"; waited += 20) {
    state = HttpCallAs(kAdminToken, svc_.port(), "GET", "/v1/deliveries/" + id)
                .Json()
                .value("state", "");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(state, "delivered");

  OtherNodePuts(CredentialKey("acme", "late"), "");
  ASSERT_TRUE(
      WaitOnLoop([&] { return !svc_.service().credentials().Find("acme", "late").has_value(); }));
  r = Post(Delivery("late", 3));
  EXPECT_EQ(r.status, 422) << r.body;
  r = Post(Delivery("hooks", 4));
  EXPECT_EQ(r.status, 202) << r.body;
}

// Verifies the security case: a tenant's keys rotated on another node are in force here
// within the bound (the old key 401, the new one accepted), a revoked key stops working, an empty
// list leaves the tenant without keys, and a deleted setting gives the config's keys back (as a
// restart would). Then keys this node's own admin API puts are in force at its answer and stay
// so through the reloads of its own write.
TEST_F(PostgresSettingsTest, KeysRotatedOrRevokedOnAnotherNodeAreInForceHere) {
  constexpr char kSecond[] = "acme-second-key-0123456789";
  constexpr char kThird[] = "acme-third-key-0123456789";
  EXPECT_EQ(StatsStatusWith(kConfigKey), 200);
  EXPECT_EQ(StatsStatusWith(kSecond), 401);

  OtherNodePuts(ApiKeysKey("acme"), ApiKeysToSetting({ApiKeyDigest(kSecond)}));
  ASSERT_TRUE(WaitOnLoop(
      [&] { return svc_.service().api_keys().TenantOf(ApiKeyDigest(kSecond)).has_value(); },
      "rotation_seen_ms"));
  EXPECT_EQ(StatsStatusWith(kSecond), 200);
  EXPECT_EQ(StatsStatusWith(kConfigKey), 401);

  OtherNodePuts(ApiKeysKey("acme"), ApiKeysToSetting({ApiKeyDigest(kThird)}));
  ASSERT_TRUE(WaitOnLoop(
      [&] { return !svc_.service().api_keys().TenantOf(ApiKeyDigest(kSecond)).has_value(); },
      "revocation_seen_ms"));
  EXPECT_EQ(StatsStatusWith(kSecond), 401);
  EXPECT_EQ(StatsStatusWith(kThird), 200);

  OtherNodePuts(ApiKeysKey("acme"), ApiKeysToSetting({}));
  ASSERT_TRUE(WaitOnLoop(
      [&] { return !svc_.service().api_keys().TenantOf(ApiKeyDigest(kThird)).has_value(); }));
  EXPECT_EQ(StatsStatusWith(kThird), 401);
  EXPECT_EQ(StatsStatusWith(kConfigKey), 401);

  OtherNodePuts(ApiKeysKey("acme"), "");
  ASSERT_TRUE(WaitOnLoop(
      [&] { return svc_.service().api_keys().TenantOf(ApiKeyDigest(kConfigKey)).has_value(); }));
  EXPECT_EQ(StatsStatusWith(kConfigKey), 200);

  // This node's own PUT: in force when answered, and still after the reloads it causes.
  TestResponse put = HttpCallAs(kAdminToken, svc_.port(), "PUT", "/api/admin/tenants/acme/api_keys",
                                json{{"api_keys", json::array({kSecond})}}.dump());
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(StatsStatusWith(kSecond), 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(StatsStatusWith(kSecond), 200);
  EXPECT_EQ(StatsStatusWith(kConfigKey), 401);
  auto stored = other_->ListSettings(ApiKeysKey("acme"));
  ASSERT_TRUE(stored) << stored.error().ToString();
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].second, ApiKeysToSetting({ApiKeyDigest(kSecond)}));
}

// Verifies that a quota another node sets is enforced here (the third delivery over a limit of
// two is 429 quota_exceeded), and that once removed there the tenant goes back to its config's
// and tier's (none): accepted again.
TEST_F(PostgresSettingsTest, QuotaSetOnAnotherNodeIsEnforcedHere) {
  const config::QuotaMap quotas = {{"tiny", {.limit = 2, .window = Millis(3'600'000)}}};
  OtherNodePuts(QuotasKey("acme"), QuotasToJson(quotas).dump());
  ASSERT_TRUE(WaitOnLoop([&] { return svc_.service().quotas().QuotasOf("acme").size() == 1; },
                         "quota_seen_ms"));
  EXPECT_EQ(Post(Delivery("hooks", 1)).status, 202);
  EXPECT_EQ(Post(Delivery("hooks", 2)).status, 202);
  TestResponse over = Post(Delivery("hooks", 3));
  ASSERT_EQ(over.status, 429) << over.body;
  EXPECT_EQ(over.Json()["error"], "quota_exceeded");
  EXPECT_EQ(over.Json()["quota"], "tiny");

  OtherNodePuts(QuotasKey("acme"), "");
  ASSERT_TRUE(WaitOnLoop([&] { return svc_.service().quotas().QuotasOf("acme").empty(); }));
  EXPECT_EQ(Post(Delivery("hooks", 4)).status, 202);
}

// Verifies that budget overrides another node sets are in force here, and that once it clears
// them the tenant's budget is its tier's again, as on the node that took the PUT.
TEST_F(PostgresSettingsTest, OverridesSetOnAnotherNodeAndClearedThere) {
  auto intake = [&] {
    TestResponse r =
        HttpCallAs(kAdminToken, svc_.port(), "GET", "/api/admin/tenants/acme/rate_limits");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json()["rate_limits"]["tenant_intake"];
  };
  EXPECT_EQ(intake()["limit"], 500);
  EXPECT_EQ(intake()["tier"], true);
  const BudgetOverrides overrides = {
      {pacing::BudgetName::kTenantIntake, pacing::Budget{7, 1000, 1}}};
  OtherNodePuts(OverridesKey("acme"), RateLimitsToJson(overrides).dump());
  ASSERT_TRUE(WaitOnLoop([&] {
    return svc_.service().EffectiveBudget("acme", pacing::BudgetName::kTenantIntake).second;
  }));
  EXPECT_EQ(intake()["limit"], 7);
  EXPECT_EQ(intake()["overridden"], true);

  OtherNodePuts(OverridesKey("acme"), "");
  ASSERT_TRUE(WaitOnLoop([&] {
    return !svc_.service().EffectiveBudget("acme", pacing::BudgetName::kTenantIntake).second;
  }));
  EXPECT_EQ(intake()["limit"], 500);
  EXPECT_EQ(intake()["overridden"], false);
  EXPECT_EQ(intake()["tier"], true);
}

// Verifies that while one stored setting does not parse, a reload changes nothing (a key rotated
// meanwhile is not taken, the one in force still works) and is tried again: once the setting is
// fixed, everything stored since is in force.
TEST_F(PostgresSettingsTest, ACorruptSettingKeepsTheSettingsInForceUntilFixed) {
  constexpr char kSecond[] = "acme-second-key-0123456789";
  OtherNodePuts(QuotasKey("acme"), "not json");
  OtherNodePuts(ApiKeysKey("acme"), ApiKeysToSetting({ApiKeyDigest(kSecond)}));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two reloads or more
  EXPECT_EQ(StatsStatusWith(kConfigKey), 200);
  EXPECT_EQ(StatsStatusWith(kSecond), 401);
  EXPECT_EQ(TenantOfKey(kSecond), std::nullopt);

  OtherNodePuts(QuotasKey("acme"), "");
  ASSERT_TRUE(WaitOnLoop(
      [&] { return svc_.service().api_keys().TenantOf(ApiKeyDigest(kSecond)).has_value(); }));
  EXPECT_EQ(StatsStatusWith(kSecond), 200);
  EXPECT_EQ(StatsStatusWith(kConfigKey), 401);
}

}  // namespace
}  // namespace egress::service
