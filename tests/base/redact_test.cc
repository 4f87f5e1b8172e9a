#include "dispatcher/base/redact.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace egress {
namespace {

using namespace std::string_literals;

// Verifies each secret form is shown as … and everything around it stays readable.
TEST(RedactTest, RedactsEachSecretForm) {
  struct Case {
    std::string text;
    std::string want;
  };
  const Case cases[] = {
      {"webhooks/123/AbC-tok_en.x", "webhooks/123/…"},
      {"https://discord.com/api/webhooks/123/tok?wait=true",
       "https://discord.com/api/webhooks/123/…?wait=…"},
      {"POST https://discord.com/api/v10/webhooks/9/secret-token?wait=true: Timeout",
       "POST https://discord.com/api/v10/webhooks/9/…?wait=…: Timeout"},
      {"https://hooks.slack.com/services/T000/B000/XXXXsecret",
       "https://hooks.slack.com/services/…"},
      {"https://hooks.slack.com/workflows/T1/A2/3/abc", "https://hooks.slack.com/workflows/…"},
      {"https://hooks.slack.com/triggers/T1/2/abc?x=1", "https://hooks.slack.com/triggers/…?x=…"},
      {"https://user:pa55@example.com/hook", "https://…@example.com/hook"},
      {"http://token@example.com", "http://…@example.com"},
      {"https://example.com/hook?sig=abc&k=v", "https://example.com/hook?sig=…&k=…"},
      {"https://example.com/hook?flag&k=", "https://example.com/hook?flag&k="},
      {"https://example.com/h#frag", "https://example.com/h#…"},
      {"https://example.com/plain/path", "https://example.com/plain/path"},
      {"channels/123456", "channels/123456"},
      {"#ops", "#ops"},
      {"credential_invalid: invalid_auth", "credential_invalid: invalid_auth"},
      {"", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(RedactText(c.text), c.want);
  }
}

// Verifies destination keys print with '/' for the separator and their secrets redacted.
TEST(RedactTest, DestinationKeysUseVisibleSeparators) {
  EXPECT_EQ(DestinationKeyText("discord\x1f"
                               "acme\x1f"
                               "bot\x1fwebhooks/1/tok"),
            "discord/acme/bot/webhooks/1/…");
  EXPECT_EQ(DestinationKeyText("webhook\x1f"
                               "acme\x1fsign\x1fhttps://u:p@h.example/x?a=b"),
            "webhook/acme/sign/https://…@h.example/x?a=…");
  EXPECT_EQ(DestinationKeyText("slack\x1f"
                               "acme\x1f"
                               "bot\x1f"
                               "C123"),
            "slack/acme/bot/C123");
}

// Verifies no raw control byte passes (each shows as \xNN) while UTF-8 text stays as it is.
TEST(RedactTest, ShowsControlBytesEscaped) {
  EXPECT_EQ(RedactText("a\nb\rc\x1b[31m\x7f"), "a\\x0ab\\x0dc\\x1b[31m\\x7f");
  EXPECT_EQ(RedactText("\0x"s), "\\x00x");
  EXPECT_EQ(RedactText("caf\xc3\xa9"), "caf\xc3\xa9");
  // A newline ends a URL: a forged log line after it is escaped, not treated as the URL.
  EXPECT_EQ(RedactText("https://e.example/?a=1\nlevel=info"),
            "https://e.example/?a=…\\x0alevel=info");
}

// Verifies hostile shapes: no secret byte survives, no crash, output bounded.
TEST(RedactTest, HostileInputs) {
  struct Case {
    std::string text;
    std::string secret;  // must not appear in the output
  };
  const Case cases[] = {
      {"webhooks/1/SECRETTOKEN", "SECRETTOKEN"},
      {"xwebhooks/1/NOTATOKEN", ""},  // not a path segment: left alone
      {"https://a:SECRETPW@b@host/", "SECRETPW"},
      {"://SECRET@", "SECRET"},
      {"https://h/?=SECRETV", "SECRETV"},
      {"https://h/?a=SECRETV&&&b", "SECRETV"},
      {"https://h/services/SECRETP", "SECRETP"},
      {"/services/T1/SECRETP", "SECRETP"},
      {"https://h/webhooks/1/SECRETTOK/more", "SECRETTOK"},
      {"https://https://u:SECRETPW@x", "SECRETPW"},
      {"webhooks/", ""},
      {"webhooks/1/", ""},
      {"https://", ""},
      {"?", ""},
      {"://", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string out = RedactText(c.text);
    if (!c.secret.empty()) {
      EXPECT_EQ(out.find(c.secret), std::string::npos) << out;
    }
    EXPECT_LE(out.size(), c.text.size() * 4 + 8);
  }
  EXPECT_EQ(RedactText("xwebhooks/1/NOTATOKEN"), "xwebhooks/1/NOTATOKEN");
  std::string big(1 << 16, '\x01');
  EXPECT_EQ(RedactText(big).size(), big.size() * 4);
  EXPECT_EQ(RedactText("https://h/?a=S\xc3\xa9CRET"), "https://h/?a=…");
}

}  // namespace
}  // namespace egress
