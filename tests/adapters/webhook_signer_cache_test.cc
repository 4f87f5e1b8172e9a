#include "adapters/webhook_signer_cache.h"

#include <string>

#include <gtest/gtest.h>

#include "adapters/base64.h"

namespace egress::adapters {
namespace {

std::string Secret(char fill) { return "whsec_" + Base64Encode(std::string(32, fill)); }

Credential WithSecrets(std::vector<std::string> secrets) {
  return Credential{.name = "hook", .platform = "webhook", .secrets = std::move(secrets)};
}

// Verifies that equal secrets share one prepared signer and that other secrets (a rotation) get
// their own, signing with every key.
TEST(WebhookSignerCacheTest, PreparesEachSetOfSecretsOnce) {
  WebhookSignerCache cache;
  auto a = cache.For(WithSecrets({Secret('a')}));
  auto again = cache.For(WithSecrets({Secret('a')}));
  auto rotated = cache.For(WithSecrets({Secret('b'), Secret('a')}));
  ASSERT_TRUE(a.has_value() && again.has_value() && rotated.has_value());
  EXPECT_EQ(a->get(), again->get());
  EXPECT_NE(a->get(), rotated->get());
  EXPECT_EQ((*rotated)->key_count(), 2u);
  std::string one;
  std::string two;
  (*a)->Append("id", 1, "{}", &one);
  (*rotated)->Append("id", 1, "{}", &two);
  EXPECT_TRUE(two.ends_with(" " + one)) << two;
}

// Verifies the errors: no secret, or a bad one named by its position; nothing bad is kept, so
// the same credential fixed works at once.
TEST(WebhookSignerCacheTest, RefusesBadSecretsNamingThem) {
  WebhookSignerCache cache;
  auto none = cache.For(WithSecrets({}));
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), Status::Code::kFailedPrecondition);
  auto bad = cache.For(WithSecrets({Secret('a'), "whsec_!!"}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(bad.error().message().find("'hook' secret #2"), std::string::npos)
      << bad.error().message();
  EXPECT_TRUE(cache.For(WithSecrets({Secret('a'), Secret('c')})).has_value());
}

// Verifies that the cache stays bounded: past kMaxEntries it starts over, and still answers.
TEST(WebhookSignerCacheTest, StaysBounded) {
  WebhookSignerCache cache;
  auto first = cache.For(WithSecrets({Secret('a')}));
  ASSERT_TRUE(first.has_value());
  for (size_t i = 0; i < WebhookSignerCache::kMaxEntries; ++i) {
    std::string bytes(32, 'x');
    bytes.replace(0, sizeof(i), reinterpret_cast<const char*>(&i), sizeof(i));
    ASSERT_TRUE(cache.For(WithSecrets({"whsec_" + Base64Encode(bytes)})).has_value());
  }
  auto later = cache.For(WithSecrets({Secret('a')}));
  ASSERT_TRUE(later.has_value());
  EXPECT_NE(first->get(), later->get());  // prepared again after the reset
}

}  // namespace
}  // namespace egress::adapters
