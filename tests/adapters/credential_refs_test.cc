#include "adapters/credential_refs.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace egress::adapters {
namespace {

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Verifies a token is read from a file (white space dropped) and from a variable.
TEST(CredentialRefsTest, ReadsTokenFromFileAndEnv) {
  TempDir dir;
  Write(dir.Sub("bot"), "  xoxb-FROMFILE\n");
  Credential c{.name = "bot", .platform = "slack"};
  ASSERT_TRUE(ResolveCredentialRefs(
                  {.token = SecretRef{.kind = SecretRef::Kind::kFile, .where = dir.Sub("bot")}}, c)
                  .ok());
  EXPECT_EQ(c.token, "xoxb-FROMFILE");
  ::setenv("EGRESS_TEST_TOKEN_REF", "xoxb-FROMENV", 1);
  ASSERT_TRUE(
      ResolveCredentialRefs(
          {.token = SecretRef{.kind = SecretRef::Kind::kEnv, .where = "EGRESS_TEST_TOKEN_REF"}}, c)
          .ok());
  EXPECT_EQ(c.token, "xoxb-FROMENV");
  ::unsetenv("EGRESS_TEST_TOKEN_REF");
}

// Verifies webhook secrets one per line (a rotation) from a file.
TEST(CredentialRefsTest, ReadsWebhookSecretsOnePerLine) {
  TempDir dir;
  Write(dir.Sub("hook"), std::string(kSecret) + "\n\n" + kSecret + "\r\n");
  Credential c{.name = "hook", .platform = "webhook"};
  ASSERT_TRUE(
      ResolveCredentialRefs(
          {.secret = SecretRef{.kind = SecretRef::Kind::kFile, .where = dir.Sub("hook")}}, c)
          .ok());
  ASSERT_EQ(c.secrets.size(), 2u);
  EXPECT_EQ(c.secrets[0], kSecret);
}

// Verifies every failure names the reference and never the value.
TEST(CredentialRefsTest, ErrorsNameTheReferenceNotTheValue) {
  TempDir dir;
  Write(dir.Sub("empty"), " \n");
  Write(dir.Sub("ctl"), "xoxb-SECRET\x01VALUE");
  Write(dir.Sub("badhook"), "whsec_NOTBASE64!!\n");
  Write(dir.Sub("big"), std::string(kMaxSecretFileBytes + 1, 'a'));
  ::unsetenv("EGRESS_TEST_UNSET_REF");
  struct Case {
    CredentialRefs refs;
    std::string platform;
    Status::Code code;
    std::string names;
  };
  const Case cases[] = {
      {{.token = SecretRef{.kind = SecretRef::Kind::kFile, .where = dir.Sub("missing")}},
       "slack",
       Status::Code::kNotFound,
       dir.Sub("missing")},
      {{.token = SecretRef{.kind = SecretRef::Kind::kEnv, .where = "EGRESS_TEST_UNSET_REF"}},
       "slack",
       Status::Code::kNotFound,
       "EGRESS_TEST_UNSET_REF"},
      {{.token = SecretRef{.kind = SecretRef::Kind::kFile, .where = dir.Sub("empty")}},
       "line",
       Status::Code::kInvalidArgument,
       dir.Sub("empty")},
      {{.token = SecretRef{.kind = SecretRef::Kind::kFile, .where = dir.Sub("ctl")}},
       "discord",
       Status::Code::kInvalidArgument,
       dir.Sub("ctl")},
      {{.token = SecretRef{.kind = SecretRef::Kind::kFile, .where = dir.Sub("big")}},
       "slack",
       Status::Code::kInvalidArgument,
       dir.Sub("big")},
      {{.secret = SecretRef{.kind = SecretRef::Kind::kFile, .where = dir.Sub("badhook")}},
       "webhook",
       Status::Code::kInvalidArgument,
       dir.Sub("badhook")},
      {{.token = SecretRef{.kind = SecretRef::Kind::kFile, .where = dir.path()}},
       "slack",
       Status::Code::kIoError,
       dir.path()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.names);
    Credential credential{.name = "x", .platform = c.platform, .token = "keep"};
    Status s = ResolveCredentialRefs(c.refs, credential);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), c.code) << s.ToString();
    EXPECT_NE(s.message().find(c.names), std::string::npos) << s.message();
    for (const char* value : {"SECRET", "VALUE", "NOTBASE64", "aaaaaaaa"}) {
      EXPECT_EQ(s.message().find(value), std::string::npos) << s.message();
    }
    EXPECT_EQ(credential.token, "keep");
  }
}

}  // namespace
}  // namespace egress::adapters
