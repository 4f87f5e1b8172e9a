#include "dispatcher/base/host_port.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace egress {
namespace {

using namespace std::string_literals;

// Verifies names, IPv4 and bracketed IPv6 literals, and ports 0 and 65535 parse to their parts.
TEST(HostPortTest, ParsesGoodForms) {
  struct Case {
    std::string_view text;
    std::string host;
    uint16_t port;
  };
  const Case cases[] = {
      {"127.0.0.1:8686", "127.0.0.1", 8686},
      {"0.0.0.0:0", "0.0.0.0", 0},
      {"localhost:8686", "localhost", 8686},
      {"LocalHost:1", "LocalHost", 1},
      {"relay-egress.internal:65535", "relay-egress.internal", 65535},
      {"svc_a.example.com:80", "svc_a.example.com", 80},
      {"[::1]:8686", "::1", 8686},
      {"[::]:0", "::", 0},
      {"[2001:db8::1]:443", "2001:db8::1", 443},
      {"[::ffff:127.0.0.1]:80", "::ffff:127.0.0.1", 80},
      {"a:9", "a", 9},
      {"1host:9", "1host", 9},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.text));
    Result<HostPort> parsed = ParseHostPort(c.text);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
    EXPECT_EQ(parsed->host, c.host);
    EXPECT_EQ(parsed->port, c.port);
    EXPECT_EQ(parsed->ToString(), c.text);  // round trip: brackets back on IPv6 only
  }
}

// Verifies each malformed or hostile form is refused with InvalidArgument naming its problem.
TEST(HostPortTest, RejectsBadForms) {
  const std::string long_name = std::string(250, 'a') + ".com";  // 254 > 253
  const std::string long_label = std::string(64, 'a') + ".com";
  const std::pair<std::string, std::string_view> cases[] = {
      {"", "expected host:port, e.g. \"127.0.0.1:8686\""},
      {"8686", "expected host:port, e.g. \"127.0.0.1:8686\""},
      {"localhost", "expected host:port, e.g. \"127.0.0.1:8686\""},
      {":80", "the host is missing, e.g. \"127.0.0.1:8686\""},
      {":", "the host is missing, e.g. \"127.0.0.1:8686\""},
      {"host:", "the port must be a number from 0 to 65535"},
      {"host:99999", "the port must be a number from 0 to 65535"},
      {"host:65536", "the port must be a number from 0 to 65535"},
      {"host:123456", "the port must be a number from 0 to 65535"},
      {"host:+80", "the port must be a number from 0 to 65535"},
      {"host:-1", "the port must be a number from 0 to 65535"},
      {"host: 80", "the port must be a number from 0 to 65535"},
      {"host:80 ", "the port must be a number from 0 to 65535"},
      {"host:8o", "the port must be a number from 0 to 65535"},
      {"host:0x50", "the port must be a number from 0 to 65535"},
      {"host:080", "the port has a leading zero"},
      {"host:80/", "the port must be a number from 0 to 65535"},
      {"a:b:c", "an IPv6 host needs brackets, e.g. \"[::1]:8686\""},
      {"::1:8686", "an IPv6 host needs brackets, e.g. \"[::1]:8686\""},
      {"[::1", "an IPv6 host needs its closing ']', e.g. \"[::1]:8686\""},
      {"[::1:8686", "an IPv6 host needs its closing ']', e.g. \"[::1]:8686\""},
      {"[]:8686", "the brackets hold no IPv6 address, e.g. \"[::1]:8686\""},
      {"[localhost]:8686", "the brackets hold no IPv6 address, e.g. \"[::1]:8686\""},
      {"[127.0.0.1]:8686", "the brackets hold no IPv6 address, e.g. \"[::1]:8686\""},
      {"[fe80::1%eth0]:80", "the brackets hold no IPv6 address, e.g. \"[::1]:8686\""},
      {"[::1]", "expected ':' and a port after ']', e.g. \"[::1]:8686\""},
      {"[::1]8686", "expected ':' and a port after ']', e.g. \"[::1]:8686\""},
      {"[::1]:", "the port must be a number from 0 to 65535"},
      {"[::1]:+1", "the port must be a number from 0 to 65535"},
      {"my host:80",
       "the host has a character hosts cannot have (names are letters, digits, "
       "'-', '_' and '.')"},
      {"http://h:80", "an IPv6 host needs brackets, e.g. \"[::1]:8686\""},
      {"h/x:80",
       "the host has a character hosts cannot have (names are letters, digits, '-', "
       "'_' and '.')"},
      {"h\xc3\xa9:80",
       "the host has a character hosts cannot have (names are letters, digits, "
       "'-', '_' and '.')"},
      {"h\n:80",
       "the host has a character hosts cannot have (names are letters, digits, '-', "
       "'_' and '.')"},
      {"host\0evil:80"s, "the address has a NUL character"},
      {"host:80\0"s, "the address has a NUL character"},
      {"999.1.1.1:80", "the host is not an IPv4 address, e.g. \"127.0.0.1\""},
      {"1.2.3:80", "the host is not an IPv4 address, e.g. \"127.0.0.1\""},
      {"1.2.3.4.5:80", "the host is not an IPv4 address, e.g. \"127.0.0.1\""},
      {"a..b:80", "each dot-separated part of the host must be 1 to 63 long"},
      {".a:80", "each dot-separated part of the host must be 1 to 63 long"},
      {"a.:80", "each dot-separated part of the host must be 1 to 63 long"},
      {long_label + ":80", "each dot-separated part of the host must be 1 to 63 long"},
      {"-a:80", "a part of the host starts or ends with '-'"},
      {"a.b-:80", "a part of the host starts or ends with '-'"},
      {long_name + ":80", "the host is longer than 253 characters"},
      {std::string(100'000, 'a') + ":80", "the host is longer than 253 characters"},
      {"[" + std::string(100'000, ':') + "]:80",
       "the brackets hold no IPv6 address, e.g. \"[::1]:8686\""},
      {"host:" + std::string(100'000, '1'), "the port must be a number from 0 to 65535"},
  };
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text.size() > 80 ? text.substr(0, 80) + "..." : text);
    Result<HostPort> parsed = ParseHostPort(text);
    ASSERT_FALSE(parsed.has_value()) << parsed->ToString();
    EXPECT_EQ(parsed.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(parsed.error().message(), error);
  }
}

// Verifies the longest legal name (253 characters in 63-character labels) is still accepted.
TEST(HostPortTest, AcceptsNamesUpToTheLimit) {
  const std::string label(63, 'a');
  const std::string name = label + "." + label + "." + label + "." + std::string(61, 'b');
  ASSERT_EQ(name.size(), kMaxHostLength);
  Result<HostPort> parsed = ParseHostPort(name + ":1");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(parsed->host, name);
}

}  // namespace
}  // namespace egress
