#include "dispatcher/cli/http_client.h"

#include <gtest/gtest.h>

namespace egress::cli {
namespace {

// Verifies --server takes host:port with or without http:// and a trailing '/', names included.
TEST(ParseServerUrlTest, AcceptsHostPortForms) {
  const std::pair<const char*, HostPort> cases[] = {
      {"http://127.0.0.1:8686", {.host = "127.0.0.1", .port = 8686}},
      {"127.0.0.1:8686/", {.host = "127.0.0.1", .port = 8686}},
      {"localhost:9000", {.host = "localhost", .port = 9000}},
      {"http://localhost:9000//", {.host = "localhost", .port = 9000}},
      {"http://[::1]:8686", {.host = "::1", .port = 8686}},
  };
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text);
    Result<HostPort> parsed = ParseServerUrl(text);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
    EXPECT_EQ(*parsed, want);
  }
}

// Verifies https, paths and malformed addresses are refused, prefixed with the flag's name.
TEST(ParseServerUrlTest, RejectsWithFlagName) {
  const std::pair<const char*, const char*> cases[] = {
      {"https://127.0.0.1:8686", "--server: https is not supported; use http://host:port"},
      {"http://127.0.0.1", "--server: expected host:port, e.g. \"127.0.0.1:8686\""},
      {"http://:8686", "--server: the host is missing, e.g. \"127.0.0.1:8686\""},
      {"localhost:+80", "--server: the port must be a number from 0 to 65535"},
      {"localhost:80/v1", "--server: the port must be a number from 0 to 65535"},
      {"ftp://h:80", "--server: only http:// is supported; use http://host:port"},
      {"", "--server: expected host:port, e.g. \"127.0.0.1:8686\""},
  };
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text);
    Result<HostPort> parsed = ParseServerUrl(text);
    ASSERT_FALSE(parsed.has_value());
    EXPECT_EQ(parsed.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(parsed.error().message(), error);
  }
}

}  // namespace
}  // namespace egress::cli
