#include "dispatcher/service/tenant_settings.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace egress::service {
namespace {

using nlohmann::json;

// Verifies a credential body with any field of the wrong type is a typed 4xx naming the field,
// never an exception (json::value throws on a mistyped field).
TEST(TenantSettingsTest, MistypedCredentialFieldsAreErrors) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json{{"platform", 5}, {"token", "t"}}, "platform"},
      {json{{"platform", json::array()}, {"token", "t"}}, "platform"},
      {json{{"platform", "slack"}, {"token", 5}}, "token"},
      {json{{"platform", "slack"}, {"token", json::object()}}, "token"},
      {json{{"platform", "slack"}, {"token", nullptr}}, "token"},
      {json{{"platform", "webhook"}, {"secret", 5}}, "secret"},
      {json{{"platform", "webhook"}, {"secrets", "whsec_x"}}, "secret"},
      {json::array(), ""},
      {json(7), ""},
  };
  for (const auto& [body, field] : cases) {
    auto parsed = CredentialFromJson("c", body);
    ASSERT_FALSE(parsed.has_value()) << body.dump();
    EXPECT_GE(parsed.error().http_status, 400) << body.dump();
    EXPECT_LT(parsed.error().http_status, 500) << body.dump();
    EXPECT_EQ(parsed.error().field, field) << body.dump();
  }
  auto ok = CredentialFromJson("c", json{{"platform", "slack"}, {"token", "xoxb-1"}});
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->token, "xoxb-1");
}

// Verifies rate-limit overrides of the wrong type, sign or range are a 400 naming the budget.
TEST(TenantSettingsTest, MistypedRateLimitsAreErrors) {
  for (const json& limits :
       {json::array(), json{{"tenant_egress", 5}}, json{{"tenant_egress", {{"limit", "1"}}}},
        json{{"tenant_egress", {{"limit", 1}, {"scale_ms", -5}}}},
        json{{"tenant_egress", {{"limit", 1.5}, {"scale_ms", 1000}}}},
        json{{"tenant_egress", {{"limit", 1}, {"scale_ms", 1000}, {"burst", true}}}},
        json{{"no_such_budget", {{"limit", 1}, {"scale_ms", 1000}}}},
        // Out of a budget's range (pacing::kMaxBudget*): past any platform, near int64's end.
        json{{"tenant_egress", {{"limit", 1'000'000'001}, {"scale_ms", 1000}}}},
        json{{"tenant_egress", {{"limit", 1}, {"scale_ms", INT64_MAX}}}},
        json{{"tenant_egress", {{"limit", 1}, {"scale_ms", 1000}, {"burst", 1LL << 62}}}},
        json{{"tenant_egress", {{"limit", 1}, {"scale_ms", UINT64_MAX}}}}}) {
    auto parsed = ParseRateLimits(limits);
    ASSERT_FALSE(parsed.has_value()) << limits.dump();
    EXPECT_EQ(parsed.error().http_status, 400) << limits.dump();
  }
  auto ok = ParseRateLimits(json{{"tenant_egress", {{"limit", 5}, {"scale_ms", 1000}}}});
  ASSERT_TRUE(ok.has_value());
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].second.limit, 5);
}

}  // namespace
}  // namespace egress::service
