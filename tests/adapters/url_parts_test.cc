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

// Verifies that a URL is written in RFC 3986's characters only (issue #37: a quote, an angle
// bracket or a backtick before a URL's secrets hid them from the redaction), and that the refusal
// names the byte by offset and value, not by the text around it.
TEST(UrlPartsTest, AcceptsOnlyRfc3986Characters) {
  EXPECT_TRUE(CheckHttpUrl("https://u:p@h.example:8443/a/b;c=d?x=1&y=%2F#f").ok());
  EXPECT_TRUE(CheckHttpUrl("http://[::1]:80/!$&'()*+,;=-._~").ok());
  EXPECT_TRUE(CheckHttpUrl("https://h.example/caf%C3%A9").ok());
  for (const std::string bad :
       {"\"", "<", ">", "`", "\\", "^", "{", "}", "|", " ", "\x7f", "\xc3\xa9", "%", "%4", "%zz"}) {
    SCOPED_TRACE(bad);
    const Status s = CheckHttpUrl("https://h.example/x" + bad + "?token=SECRET");
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.message().find("byte 19 (0x"), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find("SECRET"), std::string::npos) << s.message();
    EXPECT_FALSE(IsHttpUrl("https://h.example/x" + bad));
  }
  EXPECT_FALSE(CheckHttpUrl("http://h.example/", true).ok());
  EXPECT_TRUE(CheckHttpUrl("https://h.example/", true).ok());
}

}  // namespace
}  // namespace egress::adapters
