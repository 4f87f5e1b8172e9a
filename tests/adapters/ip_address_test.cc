#include "adapters/ip_address.h"

#include <string>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

namespace egress::adapters {
namespace {

// Verifies which literals parse and how they print back.
TEST(IpAddressTest, ParsesLiterals) {
  struct Case {
    std::string text;
    bool ok;
    std::string canonical;
  };
  const Case cases[] = {
      {"10.0.0.1", true, "10.0.0.1"},
      {"255.255.255.255", true, "255.255.255.255"},
      {"::1", true, "::1"},
      {"[::1]", true, "::1"},
      {"fe80::1%eth0", true, "fe80::1"},
      {"[fe80::1%25eth0]", true, "fe80::1"},
      {"::FFFF:169.254.169.254", true, "::ffff:169.254.169.254"},
      {"", false, ""},
      {"localhost", false, ""},
      {"127.1", false, ""},
      {"0x7f.0.0.1", false, ""},
      {"2130706433", false, ""},
      {"010.0.0.1", false, ""},
      {"10.0.0.1%eth0", false, ""},
      {"1.2.3.4.5", false, ""},
      {"[10.0.0.1", false, ""},
      {"::1::", false, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<IpAddress> a = IpAddress::Parse(c.text);
    ASSERT_EQ(a.has_value(), c.ok);
    if (c.ok) {
      EXPECT_EQ(a->ToString(), c.canonical);
    } else {
      EXPECT_EQ(a.error().code(), Status::Code::kInvalidArgument);
    }
  }
}

// Verifies conversion from sockaddr_in / sockaddr_in6 and refusal of other families.
TEST(IpAddressTest, ReadsSockaddr) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(0x0A000001);
  Result<IpAddress> v4 = IpAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&in), sizeof(in));
  ASSERT_TRUE(v4.has_value());
  EXPECT_TRUE(v4->is_v4());
  EXPECT_EQ(v4->v4(), 0x0A000001u);

  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_addr = in6addr_loopback;
  Result<IpAddress> v6 = IpAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&in6), sizeof(in6));
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->ToString(), "::1");

  EXPECT_FALSE(IpAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&in6), sizeof(in)).has_value());
  sockaddr other{};
  other.sa_family = AF_UNIX;
  EXPECT_FALSE(IpAddress::FromSockaddr(&other, sizeof(other)).has_value());
  EXPECT_FALSE(IpAddress::FromSockaddr(nullptr, 0).has_value());
}

}  // namespace
}  // namespace egress::adapters
