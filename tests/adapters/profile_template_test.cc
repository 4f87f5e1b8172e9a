#include "adapters/profile_template.h"

#include <string>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

using Field = ProfileTemplate::Field;

ProfileTemplate::Values SampleValues() {
  return {.base_url = "https://api.test/v1",
          .destination = "chat-1",
          .delivery_id = "01JH0000000000000000000001",
          .token = "123:abc",
          .client_id = "app-id",
          .access_token = "at-1"};
}

std::string Expand(std::string_view text, const ProfileTemplate::Values& values, bool in_url) {
  Result<ProfileTemplate> parsed = ProfileTemplate::Parse(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.has_value() ? parsed->Expand(values, in_url) : std::string("<parse error>");
}

// Verifies every placeholder is recognised, replaced by its value and reported by Uses().
TEST(ProfileTemplateTest, ParsesEveryPlaceholder) {
  const std::string text =
      "{base_url}|{destination}|{delivery_id}|{credential.token}|{credential.client_id}|"
      "{access_token}";
  Result<ProfileTemplate> parsed = ProfileTemplate::Parse(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(parsed->text(), text);
  EXPECT_FALSE(parsed->empty());
  for (Field field : {Field::kBaseUrl, Field::kDestination, Field::kDeliveryId,
                      Field::kCredentialToken, Field::kCredentialClient, Field::kAccessToken}) {
    EXPECT_TRUE(parsed->Uses(field)) << static_cast<int>(field);
  }
  EXPECT_EQ(parsed->Expand(SampleValues(), false),
            "https://api.test/v1|chat-1|01JH0000000000000000000001|123:abc|app-id|at-1");
}

// Verifies a template without placeholders is literal text and uses no field; "" is empty.
TEST(ProfileTemplateTest, LiteralTextUsesNoField) {
  Result<ProfileTemplate> parsed = ProfileTemplate::Parse("application/json");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->Expand(SampleValues(), true), "application/json");
  EXPECT_FALSE(parsed->Uses(Field::kDestination));
  EXPECT_FALSE(parsed->Uses(Field::kCredentialToken));
  Result<ProfileTemplate> empty = ProfileTemplate::Parse("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(empty->Expand(SampleValues(), false), "");
  EXPECT_TRUE(ProfileTemplate().empty());
}

// Verifies "{{" and "}}" stand for braces and never start a placeholder.
TEST(ProfileTemplateTest, DoubledBracesAreLiteral) {
  EXPECT_EQ(Expand("{{destination}}", SampleValues(), false), "{destination}");
  EXPECT_EQ(Expand("{{{destination}}}", SampleValues(), false), "{chat-1}");
  EXPECT_EQ(Expand("a{{b}}c", SampleValues(), true), "a{b}c");
  Result<ProfileTemplate> literal = ProfileTemplate::Parse("{{destination}}");
  ASSERT_TRUE(literal.has_value());
  EXPECT_FALSE(literal->Uses(Field::kDestination));
}

// Verifies unknown placeholders and unmatched braces are InvalidArgument naming the problem.
TEST(ProfileTemplateTest, RefusesUnknownPlaceholdersAndUnmatchedBraces) {
  struct Case {
    const char* text;
    const char* message_part;
  };
  const Case cases[] = {
      {"{base_url}/{chat}", "unknown placeholder {chat}"},
      {"{credential.secret}", "unknown placeholder {credential.secret}"},
      {"{}", "unknown placeholder {}"},
      {"{Destination}", "unknown placeholder {Destination}"},
      {"{base_url}/x}", "a '}' without its '{'"},
      {"}", "a '}' without its '{'"},
      {"{base_url}/{destination", "a '{' without its '}'"},
      {"{", "a '{' without its '}'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<ProfileTemplate> parsed = ProfileTemplate::Parse(c.text);
    ASSERT_FALSE(parsed.has_value());
    EXPECT_EQ(parsed.error().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(parsed.error().message().find(c.message_part), std::string::npos)
        << parsed.error().message();
  }
  // A long unknown name is cut in the message, never echoed whole.
  Result<ProfileTemplate> long_name = ProfileTemplate::Parse("{" + std::string(500, 'x') + "}");
  ASSERT_FALSE(long_name.has_value());
  EXPECT_LT(long_name.error().message().size(), 200u);
}

// Verifies that in a URL the destination cannot add a path, a query or a fragment: '/', '?',
// '#', ' ' and '%' are percent-encoded, ':' and '@' kept (a path segment allows them).
TEST(ProfileTemplateTest, UrlExpansionEncodesTheDestination) {
  ProfileTemplate::Values values = SampleValues();
  values.destination = "a/b?c=d#e f%20:g@h";
  EXPECT_EQ(Expand("{base_url}/chats/{destination}/send", values, true),
            "https://api.test/v1/chats/a%2Fb%3Fc=d%23e%20f%2520:g@h/send");
  // Outside a URL (a header, a body field) the value is as it is.
  EXPECT_EQ(Expand("{destination}", values, false), "a/b?c=d#e f%20:g@h");
  // Teams' conversation ids keep their ':' '@' ';' '=' ','.
  values.destination = "19:abc@thread.tacv2;messageid=1,2";
  EXPECT_EQ(Expand("{base_url}/v3/conversations/{destination}/activities", values, true),
            "https://api.test/v1/v3/conversations/19:abc@thread.tacv2;messageid=1,2/activities");
}

// Verifies that secrets in a URL are encoded too, and {base_url} is pasted unencoded.
TEST(ProfileTemplateTest, UrlExpansionEncodesSecretsButNotTheBaseUrl) {
  ProfileTemplate::Values values = SampleValues();
  values.base_url = "http://127.0.0.1:8080/sim/telegram?x=1";
  values.token = "123:AB/cd?e";
  EXPECT_EQ(Expand("{base_url}/bot{credential.token}/sendMessage", values, true),
            "http://127.0.0.1:8080/sim/telegram?x=1/bot123:AB%2Fcd%3Fe/sendMessage");
  EXPECT_EQ(Expand("Bearer {credential.token}", values, false), "Bearer 123:AB/cd?e");
  values.access_token = "a b";
  values.client_id = "c/d";
  values.delivery_id = "id#1";
  EXPECT_EQ(Expand("{access_token}|{credential.client_id}|{delivery_id}", values, true),
            "a%20b|c%2Fd|id%231");
}

// Verifies PercentEncodeSegment keeps unreserved characters, sub-delims, ':' and '@' and
// encodes every other byte as %XX (upper-case hex), non-ASCII and NUL included.
TEST(ProfileTemplateTest, PercentEncodeSegment) {
  EXPECT_EQ(PercentEncodeSegment(""), "");
  const std::string kept = "ABCXYZabcxyz0189-._~!$&'()*+,;=:@";
  EXPECT_EQ(PercentEncodeSegment(kept), kept);
  EXPECT_EQ(PercentEncodeSegment("/?#[]% \"<>\\^`{|}"),
            "%2F%3F%23%5B%5D%25%20%22%3C%3E%5C%5E%60%7B%7C%7D");
  EXPECT_EQ(PercentEncodeSegment("\xC3\xA9"), "%C3%A9");
  EXPECT_EQ(PercentEncodeSegment(std::string("a\0b", 3)), "a%00b");
  EXPECT_EQ(PercentEncodeSegment("\n\x7F\xFF"), "%0A%7F%FF");
}

}  // namespace
}  // namespace egress::adapters
