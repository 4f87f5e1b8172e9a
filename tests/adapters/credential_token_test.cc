#include "adapters/credential_token.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/adapter_registry.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

// Verifies which tokens can ride in an Authorization header: visible ASCII only, 1 to 4096
// bytes; the message says what is wrong without echoing the token.
TEST(CredentialTokenTest, OnlyVisibleAsciiTokens) {
  for (const std::string& token :
       std::vector<std::string>{"xoxb-1", "a", std::string(kMaxTokenBytes, 'x'), "!~0Az.-_+/="}) {
    EXPECT_TRUE(CheckCredentialToken(token).ok()) << token;
  }
  const std::pair<std::string, std::string> bad[] = {
      {"", "token: required"},
      {std::string(kMaxTokenBytes + 1, 'x'), "token: 4097 bytes is over the limit of 4096"},
      {"secret-a\r\nX-Injected: 1",
       "token: byte 8 is not visible ASCII (a space, a control "
       "character or non-ASCII)"},
      {"secret a",
       "token: byte 6 is not visible ASCII (a space, a control character or "
       "non-ASCII)"},
      {std::string("secret\0", 7),
       "token: byte 6 is not visible ASCII (a space, a control "
       "character or non-ASCII)"},
      {"secret\x7f",
       "token: byte 6 is not visible ASCII (a space, a control character or "
       "non-ASCII)"},
      {"secr\xc3\xa9t",
       "token: byte 4 is not visible ASCII (a space, a control character or "
       "non-ASCII)"},
  };
  for (const auto& [token, message] : bad) {
    Status s = CheckCredentialToken(token);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(s.message(), message);
  }
}

// Verifies that no adapter puts a token that would split its Authorization header into a
// request: the credential is unusable (FailedPrecondition: the loop defers and disables the
// destination) and the error does not show the token.
TEST(CredentialTokenTest, AdaptersRefuseTokensThatSplitTheHeader) {
  AdapterRegistry adapters(TestEndpoints());
  const std::pair<std::string, std::string> deliveries[] = {
      {"slack", "C0123"},
      {"discord", "channels/123456789012345678"},
      {"line", "U0123456789abcdef0123456789abcdef"}};
  for (const auto& [platform, destination] : deliveries) {
    auto adapter = adapters.Find(platform);
    ASSERT_TRUE(adapter.has_value());
    Result<HttpRequest> r =
        (*adapter)->BuildRequest(MakeDelivery(platform, destination, R"({"text":"hi"})"),
                                 TokenCredential("secret-a\r\nX-Injected: 1"), kTestNow);
    ASSERT_FALSE(r.has_value()) << platform;
    EXPECT_EQ(r.error().code(), Status::Code::kFailedPrecondition) << platform;
    EXPECT_EQ(r.error().message().find("secret-a"), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace egress::adapters
