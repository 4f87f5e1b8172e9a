#include "adapters/json_body.h"

#include <string>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// {"a":[[...]]} with `depth` levels of objects and arrays.
std::string Nested(size_t depth) {
  return "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
}

// Verifies no tree deeper than kMaxJsonDepth is built, so no later dump of it can recurse that
// far: a stored payload over the bound is an InvalidArgument (the delivery is dead, the loop
// goes on), a response body over it is garbage.
TEST(JsonBodyTest, RefusesTextDeeperThanTheBound) {
  EXPECT_TRUE(ParseJsonObject(Nested(kMaxJsonDepth), "payload").has_value());
  for (size_t depth : {kMaxJsonDepth + 1, size_t{100'000}}) {
    auto refused = ParseJsonObject(Nested(depth), "payload");
    ASSERT_FALSE(refused.has_value()) << depth;
    EXPECT_EQ(refused.error().message(), "payload is nested deeper than 512 levels");
    EXPECT_FALSE(ParseJsonLenient(Nested(depth)).has_value()) << depth;
  }
  EXPECT_TRUE(ParseJsonLenient(Nested(3)).has_value());
  EXPECT_TRUE(ParseJsonLenient("\xEF\xBB\xBF[1]").has_value());
  EXPECT_FALSE(ParseJsonLenient("{").has_value());
}

}  // namespace
}  // namespace egress::adapters
