#include "adapters/idempotency_keys.h"

#include <regex>
#include <set>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// Verifies that the Discord nonce is stable per id, distinct across ids and within 25 chars.
TEST(IdempotencyKeysTest, DiscordNonceIsStableAndShort) {
  const std::string a = DiscordNonce("01JH0000000000000000000001");
  EXPECT_EQ(a, DiscordNonce("01JH0000000000000000000001"));
  EXPECT_EQ(a.size(), 25u);
  EXPECT_TRUE(std::regex_match(a, std::regex("[0-9a-f]{25}")));
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    seen.insert(DiscordNonce("01JH00000000000000000" + std::to_string(10000 + i)));
  }
  EXPECT_EQ(seen.size(), 1000u);
}

// Verifies the LINE retry key: a lowercase version-5 UUID, stable per id, distinct across ids.
TEST(IdempotencyKeysTest, LineRetryKeyIsVersion5Uuid) {
  const std::string key = LineRetryKey("01JH0000000000000000000001");
  EXPECT_EQ(key, LineRetryKey("01JH0000000000000000000001"));
  EXPECT_TRUE(std::regex_match(
      key, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << key;
  EXPECT_NE(key, LineRetryKey("01JH0000000000000000000002"));
}

}  // namespace
}  // namespace egress::adapters
