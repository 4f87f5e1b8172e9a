#include "adapters/url_parts.h"

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// Verifies URL joining and the scheme and segment checks used on destinations.
TEST(UrlPartsTest, JoinsAndChecks) {
  EXPECT_EQ(JoinUrl("https://a.test/", "/x"), "https://a.test/x");
  EXPECT_EQ(JoinUrl("https://a.test", "/x"), "https://a.test/x");
  EXPECT_TRUE(IsHttpUrl("http://127.0.0.1:8080/hook"));
  EXPECT_TRUE(IsHttpUrl("HTTPS://example.com"));
  EXPECT_FALSE(IsHttpUrl("https://"));
  EXPECT_FALSE(IsHttpUrl("https:///path"));
  EXPECT_FALSE(IsHttpUrl("ftp://example.com"));
  EXPECT_FALSE(IsHttpUrl("https://exa mple.com"));
  EXPECT_FALSE(IsHttpUrl("https://example.com/\r\nX: y"));
  EXPECT_TRUE(IsHttpsUrl("https://hooks.slack.com/services/T/B/X"));
  EXPECT_FALSE(IsHttpsUrl("http://hooks.slack.com/services/T/B/X"));
  EXPECT_TRUE(IsUrlSegment("1234567890_abc-DEF.~"));
  EXPECT_FALSE(IsUrlSegment(""));
  EXPECT_FALSE(IsUrlSegment(".."));
  EXPECT_FALSE(IsUrlSegment("a/b"));
  EXPECT_FALSE(IsUrlSegment("a?b"));
  EXPECT_FALSE(IsUrlSegment(std::string(129, 'a')));
}

}  // namespace
}  // namespace egress::adapters
