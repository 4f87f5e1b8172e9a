#include "config/listen_address.h"

#include <gtest/gtest.h>

namespace egress::config {
namespace {

// Verifies host:port forms that parse, IPv6 in brackets and port 0.
TEST(ListenAddressTest, ParsesHostAndPort) {
  Result<ListenAddress> v4 = ParseListenAddress("127.0.0.1:8686");
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8686);
  Result<ListenAddress> v6 = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  Result<ListenAddress> name = ParseListenAddress("localhost:65535");
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(name->host, "localhost");
}

// Verifies each malformed form is refused with its reason.
TEST(ListenAddressTest, RejectsMalformed) {
  const std::pair<const char*, const char*> cases[] = {
      {"8686", "expected host:port, e.g. \"127.0.0.1:8686\""},
      {":8686", "expected host:port, e.g. \"127.0.0.1:8686\""},
      {"::1:8686", "an IPv6 host needs brackets, e.g. \"[::1]:8686\""},
      {"[::1:8686", "expected [IPv6]:port, e.g. \"[::1]:8686\""},
      {"[]:8686", "expected [IPv6]:port, e.g. \"[::1]:8686\""},
      {"host:", "the port must be a number from 0 to 65535"},
      {"host:65536", "the port must be a number from 0 to 65535"},
      {"host:-1", "the port must be a number from 0 to 65535"},
      {"host:123456", "the port must be a number from 0 to 65535"},
      {"my host:80", "the host has a character hosts cannot have"},
  };
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text);
    Result<ListenAddress> parsed = ParseListenAddress(text);
    ASSERT_FALSE(parsed.has_value());
    EXPECT_EQ(parsed.error().message(), error);
  }
}

}  // namespace
}  // namespace egress::config
