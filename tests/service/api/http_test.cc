#include "dispatcher/service/api/http.h"

#include <string>

#include <gtest/gtest.h>

namespace egress::service {
namespace {

namespace http = boost::beast::http;

HttpRequest WithBody(std::string body) {
  HttpRequest req{http::verb::post, "/", 11};
  req.body() = std::move(body);
  return req;
}

// Verifies that a body nested deeper than kMaxBodyDepth is a 400 naming the body, measured
// before any tree is built (a 100,000-deep one once crashed an admin route: the tree was copied
// recursively), while one at the bound parses.
TEST(HttpTest, ParseJsonBodyRefusesDeepNesting) {
  for (size_t depth : {kMaxBodyDepth + 1, size_t{100'000}}) {
    const std::string deep =
        "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
    auto parsed = ParseJsonBody(WithBody(deep));
    ASSERT_FALSE(parsed.has_value()) << depth;
    EXPECT_EQ(parsed.error().http_status, 400);
    EXPECT_EQ(parsed.error().field, "body");
    EXPECT_EQ(parsed.error().message, "body: nested " + std::to_string(depth) +
                                          " deep; at most 64 levels of objects and arrays");
  }
  const std::string at_bound = std::string(kMaxBodyDepth, '[') + std::string(kMaxBodyDepth, ']');
  EXPECT_TRUE(ParseJsonBody(WithBody(at_bound)).has_value());
  EXPECT_EQ(ParseJsonBody(WithBody("{\"a\":")).error().code, "malformed_json");
  EXPECT_EQ(ParseJsonBody(WithBody(std::string(100'000, '['))).error().code, "malformed_json");
}

// Verifies the check of names and filters taken from a request: the bound and every control
// character (NUL, the unit separator the stored credential keys use, CR, LF, DEL) are a 400
// naming the field; other bytes, UTF-8 included, pass.
TEST(HttpTest, CheckRequestTextRefusesControlCharactersAndLength) {
  EXPECT_FALSE(CheckRequestText("tenant", "acme", 8).has_value());
  EXPECT_FALSE(CheckRequestText("tenant", "caf\xc3\xa9 \"x\"", 16).has_value());
  EXPECT_FALSE(CheckRequestText("tenant", "", 8).has_value());
  for (const std::string& bad : {std::string("a\0b", 3),
                                 std::string("a\x1f"
                                             "b"),
                                 std::string("a\r\nb"), std::string("a\x7f")}) {
    auto error = CheckRequestText("name", bad, 8);
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->http_status, 400);
    EXPECT_EQ(error->field, "name");
    EXPECT_EQ(error->message, "name: contains a control character");
  }
  auto long_one = CheckRequestText("tenant", "123456789", 8);
  ASSERT_TRUE(long_one.has_value());
  EXPECT_EQ(long_one->message, "tenant: longer than 8 bytes");
}

// Verifies the platform filter: empty (any) or a platform's name; anything else, a near miss
// or a name with a NUL after it included, is a 400 naming the field.
TEST(HttpTest, CheckPlatformFilterTakesOnlyPlatforms) {
  for (const char* ok : {"", "slack", "discord", "line", "webhook"}) {
    EXPECT_FALSE(CheckPlatformFilter("platform", ok).has_value()) << ok;
  }
  for (const std::string& bad : {std::string("Slack"), std::string("5"), std::string("null"),
                                 std::string("webhook\0", 8), std::string(" line")}) {
    auto error = CheckPlatformFilter("platform", bad);
    ASSERT_TRUE(error.has_value()) << bad;
    EXPECT_EQ(error->http_status, 400);
    EXPECT_EQ(error->field, "platform");
    EXPECT_EQ(error->message, "platform: unknown platform (slack, discord, line, webhook)");
  }
}

}  // namespace
}  // namespace egress::service
