#include "dispatcher/cli/http_client.h"

#include <gtest/gtest.h>

namespace egress::cli {
namespace {

// Verifies --server takes host:port with or without http:// or https:// and a trailing '/',
// names included; https without a port is 443.
TEST(ParseServerUrlTest, AcceptsHostPortForms) {
  const std::pair<const char*, ServerUrl> cases[] = {
      {"http://127.0.0.1:8686", {false, {.host = "127.0.0.1", .port = 8686}}},
      {"127.0.0.1:8686/", {false, {.host = "127.0.0.1", .port = 8686}}},
      {"localhost:9000", {false, {.host = "localhost", .port = 9000}}},
      {"http://localhost:9000//", {false, {.host = "localhost", .port = 9000}}},
      {"http://[::1]:8686", {false, {.host = "::1", .port = 8686}}},
      {"https://relay.example.com", {true, {.host = "relay.example.com", .port = 443}}},
      {"https://relay.example.com:8443/", {true, {.host = "relay.example.com", .port = 8443}}},
      {"https://[::1]", {true, {.host = "::1", .port = 443}}},
  };
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text);
    Result<ServerUrl> parsed = ParseServerUrl(text);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
    EXPECT_EQ(*parsed, want);
  }
  EXPECT_EQ(ParseServerUrl("https://h")->ToString(), "https://h:443");
  EXPECT_EQ(ParseServerUrl("[::1]:1")->ToString(), "http://[::1]:1");
}

// Verifies other schemes, paths and malformed addresses are refused, prefixed with the flag's
// name.
TEST(ParseServerUrlTest, RejectsWithFlagName) {
  const std::pair<const char*, const char*> cases[] = {
      {"http://127.0.0.1", "--server: expected host:port, e.g. \"127.0.0.1:8686\""},
      {"http://:8686", "--server: the host is missing, e.g. \"127.0.0.1:8686\""},
      {"localhost:+80", "--server: the port must be a number from 0 to 65535"},
      {"localhost:80/v1", "--server: the port must be a number from 0 to 65535"},
      {"ftp://h:80",
       "--server: only http:// and https:// are supported, e.g. https://relay.example.com"},
      {"", "--server: expected host:port, e.g. \"127.0.0.1:8686\""},
      {"https://", "--server: expected host:port, e.g. \"127.0.0.1:8686\""},
  };
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text);
    Result<ServerUrl> parsed = ParseServerUrl(text);
    ASSERT_FALSE(parsed.has_value());
    EXPECT_EQ(parsed.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(parsed.error().message(), error);
  }
}

// Verifies a refused connection is Unavailable (the CLI then falls back to the store) and a bad
// token is refused before connecting.
TEST(HttpCallTest, RefusedIsUnavailableAndBadTokenInvalid) {
  const ServerUrl nowhere{false, {.host = "127.0.0.1", .port = 0}};
  EXPECT_EQ(HttpCall(nowhere, "GET", "/healthz", "", "").error().code(),
            Status::Code::kUnavailable);
  Result<HttpReply> bad = HttpCall(nowhere, "GET", "/healthz", "", "s3cret\nvalue");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(bad.error().message().find("s3cret"), std::string::npos);
}

}  // namespace
}  // namespace egress::cli
