#include "dispatcher/base/redact.h"

#include <chrono>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "dispatcher/base/clock.h"

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
      {"https://example.com/hook?flag&k=", "https://example.com/hook?…&k="},
      {"https://example.com/hook?SECRETKEY", "https://example.com/hook?…"},
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

// Verifies the secret paths declared per platform (docs/security.md, "Redaction"): Telegram's bot
// token, Teams' connector webhooks, Mattermost's and Rocket.Chat's hooks; other paths under those
// names stay readable.
TEST(RedactTest, RedactsDeclaredSecretPaths) {
  struct Case {
    std::string text;
    std::string want;
  };
  const Case cases[] = {
      {"https://api.telegram.org/bot123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11/sendMessage",
       "https://api.telegram.org/bot…/sendMessage"},
      {"https://acme.webhook.office.com/webhookb2/0000-aa@1111-bb/IncomingWebhook/f00d/2222-cc",
       "https://acme.webhook.office.com/webhookb2/…"},
      {"https://outlook.office.com/webhook/0000-aa@1111-bb/IncomingWebhook/f00d/2222-cc",
       "https://outlook.office.com/webhook/0000-aa@1111-bb/IncomingWebhook/…"},
      {"https://mm.example.com/hooks/xpe1z2qr3oktd8fkeumjwb7s9a", "https://mm.example.com/hooks/…"},
      {"https://chat.example.com/hooks/6zKkjyAsRxXYnAe3q/SECRETTOKENabcdef?x=1",
       "https://chat.example.com/hooks/…?x=…"},
      {"http://127.0.0.1:8080/hooks/slow", "http://127.0.0.1:8080/hooks/slow"},
      // A destination key as shown, of a credential named "hooks": not a path.
      {"webhook/acme/hooks/http://127.0.0.1:1/b", "webhook/acme/hooks/http://127.0.0.1:1/b"},
      {"https://example.com/hooks/", "https://example.com/hooks/"},
      {"https://example.com/robots/bot", "https://example.com/robots/bot"},
      {"https://example.com/bot12/x", "https://example.com/bot12/x"},
      {"https://services.example.com/services", "https://services.example.com/services"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(RedactText(c.text), c.want);
    EXPECT_EQ(RedactDestination(c.text), c.want);
  }
}

// Verifies the audit's bypass (issue #37): a quote, an angle bracket or a backtick before a URL's
// secrets. A single quote is part of a URL (RFC 3986 sub-delimiter) in any text; the others end
// a URL in free text, and a destination is redacted as one URL to its end whatever it holds.
TEST(RedactTest, QuotesDoNotEndADestination) {
  const std::string secrets[] = {"SECRETQ", "SECRETPW", "SECRETF"};
  for (const std::string quote : {"'", "\"", "<", ">", "`"}) {
    SCOPED_TRACE(quote);
    const std::string query = "https://h.example/x" + quote + "?token=SECRETQ&a=1";
    const std::string user = "https://u" + quote + "ser:SECRETPW@h.example/x";
    const std::string frag = "https://h.example/x" + quote + "#SECRETF";
    for (const std::string& d : {query, user, frag}) {
      SCOPED_TRACE(d);
      const std::string shown = RedactDestination(d);
      for (const std::string& secret : secrets) {
        EXPECT_EQ(shown.find(secret), std::string::npos) << shown;
        EXPECT_EQ(DestinationKeyText("webhook\x1f"
                                     "acme\x1fsign\x1f" +
                                     d)
                      .find(secret),
                  std::string::npos);
      }
    }
  }
  // In free text, the single quote no longer ends a URL.
  EXPECT_EQ(RedactText("POST https://h.example/x'?token=SECRETQ: Timeout"),
            "POST https://h.example/x'?token=…: Timeout");
  EXPECT_EQ(RedactText("https://u'ser:SECRETPW@h.example/"), "https://…@h.example/");
  // A double quote ends one in free text (JSON, quoted logs): the text after it stays.
  EXPECT_EQ(RedactText(R"({"url":"https://h.example/?a=SECRETQ","n":1})"),
            R"({"url":"https://h.example/?a=…","n":1})");
}

// Verifies the shapes an adversarial review of the first version found left in clear (and so not
// sealed): empty segments, a trailing slash, percent-escapes, another case, ";params".
TEST(RedactTest, SecretPathsAsAReceiverMayReadThem) {
  const std::string secret = "SECRETX0";
  const std::string mm = "xpe1z2qr3oktd8fkeumjwb7s9a";
  const std::string cases[] = {
      "https://hooks.slack.com/services//T0/B0/" + secret,
      "https://discord.com/api/webhooks//123/" + secret,
      "https://discord.com/api/webhooks/123//" + secret,
      "https://mm.example/hooks//" + mm,
      "https://mm.example/hooks/" + mm + "/",
      "https://a.webhook.office.com/webhookb2//g@g/IncomingWebhook//H/" + secret,
      "https://hooks.slack.com/%73ervices/T/B/" + secret,
      "https://discord.com/api/webhooks/%31%32/" + secret,
      "https://api.telegram.org/bot123%3A" + secret + "/sendMessage",
      "https://hooks.slack.com/Services/T/B/" + secret,
      "https://a.webhook.office.com/WEBHOOKB2/x/" + secret,
      "https://hooks.slack.com/services;x/T/B/" + secret,
      "https://example.com/hook?" + secret,
      "https://example.com/hook?a&" + secret,
  };
  for (const std::string& d : cases) {
    SCOPED_TRACE(d);
    const std::string want_gone = d.find(mm) != std::string::npos ? mm : secret;
    EXPECT_EQ(RedactDestination(d).find(want_gone), std::string::npos) << RedactDestination(d);
    EXPECT_EQ(RedactText(d).find(want_gone), std::string::npos) << RedactText(d);
  }
}

// Verifies the redaction is linear in its input: 1 MiB of each shape that made the first version
// quadratic (a scan to the end of the text at every segment start or nested "://": minutes for
// 1 MiB) takes well under a second. The bound is two orders of magnitude from the quadratic
// cost, so a loaded machine does not fail it.
TEST(RedactTest, HostileInputsTakeLinearTime) {
  auto repeat = [](std::string_view unit) {
    std::string text;
    while (text.size() < (1u << 20)) {
      text += unit;
    }
    return text;
  };
  for (const std::string& text :
       {repeat("!x"), repeat("/a"), repeat("://"), repeat("://@"), repeat("webhooks/x!"),
        repeat("services/"), repeat("?a"), repeat("hooks/1/"), "https://h/" + repeat("/bot1"),
        "https://" + repeat("u@")}) {
    SystemClock clock;
    const SteadyTime start = clock.Now();
    const std::string out = RedactText(text);
    const std::string key = DestinationKeyText("webhook\x1f" + text + "\x1f" + text);
    const double seconds = std::chrono::duration<double>(clock.Now() - start).count();
    EXPECT_LT(seconds, 5.0) << text.substr(0, 16);
    EXPECT_LE(out.size(), text.size() * 4 + 8);
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
  EXPECT_EQ(RedactText("https://h/?a=S\xc3\xa9"
                       "CRET"),
            "https://h/?a=…");
}

}  // namespace
}  // namespace egress
