#include "tests/simulator/url_form.h"

#include <gtest/gtest.h>

namespace egress::sim {
namespace {

// Verifies escapes, '+' only in forms, and malformed escapes refused.
TEST(UrlFormTest, PercentDecode) {
  EXPECT_EQ(PercentDecode("19%3Aabc%40thread.tacv2", false), "19:abc@thread.tacv2");
  EXPECT_EQ(PercentDecode("a+b%2B", true), "a b+");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("%e2%82%AC", false), "\xe2\x82\xac");
  EXPECT_FALSE(PercentDecode("100%", false).has_value());
  EXPECT_FALSE(PercentDecode("%4", false).has_value());
  EXPECT_FALSE(PercentDecode("%zz", false).has_value());
}

// Verifies a client-credentials body decodes, first name wins, and bad escapes refuse the form.
TEST(UrlFormTest, ParseForm) {
  auto form = ParseForm(
      "grant_type=client_credentials&client_id=app&&scope=https%3A%2F%2Fapi.botframework.com%2F."
      "default&flag&client_id=second");
  ASSERT_TRUE(form.has_value());
  EXPECT_EQ(form->at("grant_type"), "client_credentials");
  EXPECT_EQ(form->at("client_id"), "app");
  EXPECT_EQ(form->at("scope"), "https://api.botframework.com/.default");
  EXPECT_EQ(form->at("flag"), "");
  EXPECT_EQ(form->size(), 4u);
  EXPECT_TRUE(ParseForm("")->empty());
  EXPECT_FALSE(ParseForm("a=%G1").has_value());
}

}  // namespace
}  // namespace egress::sim
