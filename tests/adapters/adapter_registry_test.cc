#include "adapters/adapter_registry.h"

#include <random>

#include <gtest/gtest.h>

#include "dispatcher/pacing/classify.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

// Verifies the registry finds each platform's adapter and names an unknown platform.
TEST(AdapterRegistryTest, FindsByPlatformName) {
  AdapterRegistry registry(TestEndpoints());
  for (const char* platform : {"slack", "discord", "line", "webhook"}) {
    Result<const PlatformAdapter*> a = registry.Find(platform);
    ASSERT_TRUE(a.has_value()) << platform;
    EXPECT_NE(*a, nullptr);
  }
  EXPECT_NE(*registry.Find("slack"), *registry.Find("discord"));
  Result<const PlatformAdapter*> unknown = registry.Find("teams");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(unknown.error().message().find("teams"), std::string::npos);
  EXPECT_FALSE(registry.Find("Slack").has_value());
}

// Verifies the registry's adapters use the configured endpoints.
TEST(AdapterRegistryTest, UsesEndpoints) {
  PlatformEndpoints endpoints = TestEndpoints();
  endpoints.line_base_url = "http://127.0.0.1:7000";
  AdapterRegistry registry(endpoints);
  Result<HttpRequest> r = (*registry.Find("line"))
                              ->BuildRequest(MakeDelivery("line", "U1", R"({"messages":[]})"),
                                             TokenCredential("t"), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->url, "http://127.0.0.1:7000/v2/bot/message/push");
}

std::string RandomBytes(std::mt19937_64& rng, size_t max_len) {
  std::string out(rng() % (max_len + 1), '\0');
  for (char& c : out) {
    c = static_cast<char>(rng() & 0xff);
  }
  return out;
}

// Verifies that seeded garbage (statuses, header names and values, bodies, payloads and
// destinations) never crashes an adapter and always yields a sane report.
TEST(AdapterRegistryTest, GarbageNeverCrashes) {
  AdapterRegistry registry(TestEndpoints());
  std::mt19937_64 rng(20260101);
  const std::vector<std::string> names = {
      "Retry-After", "X-RateLimit-Remaining",      "X-RateLimit-Reset", "X-RateLimit-Scope",
      "RateLimit",   "X-Line-Accepted-Request-Id", "webhook-delivery",  "X-RateLimit-Global"};
  const std::vector<std::string> bodies = {R"({"ok":false,"error":null})",
                                           R"({"retry_after":"x","global":"yes","code":"10015"})",
                                           R"({"message":5})",
                                           R"({"ok":true,"ts":12})",
                                           R"({"id":[1]})",
                                           "[]",
                                           "null",
                                           R"({"message":"You have reached your monthly limit."})"};
  const int statuses[] = {0,   1,   99,  200, 204, 301, 400, 401,
                          403, 404, 409, 410, 429, 500, 503, 999};
  for (const char* platform : {"slack", "discord", "line", "webhook"}) {
    const PlatformAdapter* adapter = *registry.Find(platform);
    for (int i = 0; i < 3000; ++i) {
      HttpHeaders headers;
      for (size_t h = rng() % 6; h > 0; --h) {
        headers.push_back({rng() % 4 == 0 ? RandomBytes(rng, 12) : names[rng() % names.size()],
                           RandomBytes(rng, 40)});
      }
      std::string body = rng() % 2 == 0 ? bodies[rng() % bodies.size()] : RandomBytes(rng, 200);
      const int status = statuses[rng() % std::size(statuses)];
      storage::Delivery d = MakeDelivery(platform, RandomBytes(rng, 30), RandomBytes(rng, 50));
      AttemptReport r = adapter->Interpret(d, Response(status, headers, body), kTestNow);
      EXPECT_EQ(r.attempt.http_status, status);
      EXPECT_LE(r.attempt.detail.size(), 300u);
      EXPECT_LE(r.platform_ref.size(), 64u);
      if (r.outcome.retry_after.has_value()) {
        EXPECT_GE(r.outcome.retry_after->count(), 0);
      }
      (void)pacing::Classify(r.outcome);
      Result<HttpRequest> built = adapter->BuildRequest(d, TokenCredential("t"), kTestNow);
      if (!built.has_value()) {
        EXPECT_FALSE(built.error().message().empty());
      }
    }
  }
}

}  // namespace
}  // namespace egress::adapters
