#include "adapters/ssrf_guard.h"

#include <string>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "adapters/ip_network.h"

namespace egress::adapters {
namespace {

// These tests only classify addresses: nothing is resolved and no socket is opened.

AddressClass ClassOf(const std::string& text) {
  Result<IpAddress> a = IpAddress::Parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.has_value() ? ClassifyAddress(*a) : AddressClass::kReserved;
}

// Verifies the class of every special-purpose range, including IPv4 embedded in IPv6.
TEST(SsrfGuardTest, ClassifiesAddresses) {
  using C = AddressClass;
  struct Case {
    std::string text;
    AddressClass want;
  };
  const Case cases[] = {
      {"8.8.8.8", C::kPublic},
      {"1.1.1.1", C::kPublic},
      {"172.15.255.255", C::kPublic},
      {"172.32.0.0", C::kPublic},
      {"100.63.255.255", C::kPublic},
      {"100.128.0.0", C::kPublic},
      {"2606:4700:4700::1111", C::kPublic},
      {"0.0.0.0", C::kUnspecified},
      {"0.1.2.3", C::kUnspecified},
      {"::", C::kUnspecified},
      {"127.0.0.1", C::kLoopback},
      {"127.255.255.254", C::kLoopback},
      {"::1", C::kLoopback},
      {"10.0.0.1", C::kPrivate},
      {"172.16.0.1", C::kPrivate},
      {"172.31.255.255", C::kPrivate},
      {"192.168.1.1", C::kPrivate},
      {"fec0::1", C::kPrivate},
      {"100.64.0.1", C::kSharedAddressSpace},
      {"100.127.255.255", C::kSharedAddressSpace},
      {"169.254.1.1", C::kLinkLocal},
      {"fe80::1", C::kLinkLocal},
      {"febf::1", C::kLinkLocal},
      {"fc00::1", C::kUniqueLocal},
      {"fdff:ffff::1", C::kUniqueLocal},
      {"169.254.169.254", C::kCloudMetadata},
      {"169.254.170.2", C::kCloudMetadata},
      {"168.63.129.16", C::kCloudMetadata},
      {"100.100.100.200", C::kCloudMetadata},
      {"192.0.0.192", C::kCloudMetadata},
      {"fd00:ec2::254", C::kCloudMetadata},
      {"224.0.0.1", C::kMulticast},
      {"239.255.255.250", C::kMulticast},
      {"ff02::1", C::kMulticast},
      {"255.255.255.255", C::kBroadcast},
      {"240.0.0.1", C::kReserved},
      {"192.0.2.1", C::kReserved},
      {"198.18.0.1", C::kReserved},
      {"203.0.113.7", C::kReserved},
      {"2001:db8::1", C::kReserved},
      {"2001:0:4136:e378::1", C::kReserved},
      {"100::1", C::kReserved},
      {"64:ff9b:1::1", C::kReserved},
      {"4000::1", C::kReserved},
      // IPv4 embedded in IPv6 takes the embedded address's class.
      {"::ffff:127.0.0.1", C::kLoopback},
      {"::ffff:10.0.0.1", C::kPrivate},
      {"::ffff:169.254.169.254", C::kCloudMetadata},
      {"::ffff:a9fe:a9fe", C::kCloudMetadata},
      {"::ffff:8.8.8.8", C::kPublic},
      {"::ffff:0:10.0.0.1", C::kPrivate},
      {"::127.0.0.1", C::kLoopback},
      {"::0.0.0.2", C::kUnspecified},
      {"64:ff9b::a9fe:a9fe", C::kCloudMetadata},
      {"64:ff9b::808:808", C::kPublic},
      {"2002:a00:1::", C::kPrivate},
      {"2002:7f00:1::1", C::kLoopback},
      {"2002:808:808::1", C::kPublic},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(AddressClassName(ClassOf(c.text)), AddressClassName(c.want));
  }
}

// Verifies the decision under the default, private-allowing and metadata-allowing profiles.
TEST(SsrfGuardTest, DecidesPerPolicy) {
  const SsrfPolicy strict;
  const SsrfPolicy private_ok{.allow_private_networks = true};
  const SsrfPolicy metadata_ok{.allow_private_networks = true, .allow_cloud_metadata = true};
  struct Case {
    std::string text;
    bool strict;
    bool private_ok;
    bool metadata_ok;
  };
  const Case cases[] = {
      {"93.184.216.34", true, true, true},
      {"2606:4700::1", true, true, true},
      {"10.0.0.1", false, true, true},
      {"127.0.0.1", false, true, true},
      {"[::1]", false, true, true},
      {"::ffff:192.168.0.1", false, true, true},
      {"100.64.0.1", false, true, true},
      {"fe80::1%lo", false, true, true},
      {"fd12:3456::1", false, true, true},
      {"198.18.0.1", false, true, true},
      {"169.254.169.254", false, false, true},
      {"fd00:ec2::254", false, false, true},
      {"::ffff:169.254.169.254", false, false, true},
      {"0.0.0.0", false, false, false},
      {"::", false, false, false},
      {"224.0.0.251", false, false, false},
      {"ff05::2", false, false, false},
      {"255.255.255.255", false, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(CheckDestination(c.text, strict).ok(), c.strict);
    EXPECT_EQ(CheckDestination(c.text, private_ok).ok(), c.private_ok);
    EXPECT_EQ(CheckDestination(c.text, metadata_ok).ok(), c.metadata_ok);
  }
}

// Verifies that a refusal is Rejected, says destination_not_allowed and the class, and never
// names the resolved address (the message reaches the tenant).
TEST(SsrfGuardTest, RefusalNamesClassNotAddress) {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"169.254.169.254", "destination_not_allowed: metadata address"},
      {"fd00:ec2::254", "destination_not_allowed: metadata address"},
      {"127.0.0.1", "destination_not_allowed: loopback address"},
      {"::1", "destination_not_allowed: loopback address"},
      {"10.1.2.3", "destination_not_allowed: private address"},
      {"100.64.0.9", "destination_not_allowed: private address"},
      {"fd12::1", "destination_not_allowed: private address"},
      {"169.254.1.1", "destination_not_allowed: link-local address"},
      {"fe80::1", "destination_not_allowed: link-local address"},
      {"0.0.0.0", "destination_not_allowed: reserved address"},
      {"224.0.0.1", "destination_not_allowed: reserved address"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Status s = CheckDestination(c.text, SsrfPolicy{});
    EXPECT_EQ(s.code(), Status::Code::kRejected);
    EXPECT_EQ(s.message(), c.message);
    EXPECT_EQ(s.ToString().find(c.text), std::string::npos);
  }
}

IpNetwork Net(const std::string& text) {
  Result<IpNetwork> n = IpNetwork::Parse(text);
  EXPECT_TRUE(n.has_value()) << text;
  return n.has_value() ? *n : IpNetwork();
}

IpAddress Ip(const std::string& text) {
  Result<IpAddress> a = IpAddress::Parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.has_value() ? *a : IpAddress();
}

// Verifies that allowed_cidrs open exactly their private ranges: not neighbours, not metadata,
// not multicast, and an IPv4-mapped address matches as its IPv4 address.
TEST(SsrfGuardTest, AllowedCidrsOpenOnlyTheirRanges) {
  SsrfPolicy tenant{.allowed_cidrs = {Net("10.20.0.0/16"), Net("fd00:1::/32"),
                                      Net("169.254.0.0/16"), Net("224.0.0.0/4")}};
  struct Case {
    std::string text;
    bool allowed;
  };
  const Case cases[] = {
      {"10.20.0.1", true},        {"10.20.255.255", true},  {"::ffff:10.20.3.4", true},
      {"10.21.0.1", false},       {"10.19.255.255", false}, {"192.168.1.1", false},
      {"127.0.0.1", false},       {"fd00:1::5", true},      {"fd00:2::5", false},
      {"169.254.169.254", false},  // metadata stays refused even inside an allowed range
      {"169.254.1.1", true},      {"224.0.0.1", false},     {"8.8.8.8", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(CheckDestination(c.text, tenant).ok(), c.allowed);
    EXPECT_FALSE(CheckDestination(c.text, SsrfPolicy{}).ok() && !c.allowed);
  }
}

// Verifies that the service's own listen address is refused even where private networks are
// open, at its port only; an unspecified listen address refuses every non-public address there.
TEST(SsrfGuardTest, RefusesTheServiceListenAddress) {
  SsrfPolicy open{.allow_private_networks = true,
                  .allowed_cidrs = {Net("127.0.0.0/8")},
                  .refused_endpoints = {{Ip("127.0.0.1"), 8686}}};
  EXPECT_EQ(CheckDestination(Ip("127.0.0.1"), 8686, open).message(),
            "destination_not_allowed: service address");
  EXPECT_FALSE(CheckDestination(Ip("::ffff:127.0.0.1"), 8686, open).ok());
  EXPECT_TRUE(CheckDestination(Ip("127.0.0.1"), 8687, open).ok());
  EXPECT_TRUE(CheckDestination(Ip("127.0.0.2"), 8686, open).ok());
  SsrfPolicy any{.allow_private_networks = true, .refused_endpoints = {{Ip("0.0.0.0"), 9000}}};
  for (const char* text : {"127.0.0.1", "127.9.9.9", "::1", "10.0.0.5", "0.0.0.0"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(CheckDestination(Ip(text), 9000, any).ok());
    EXPECT_TRUE(CheckDestination(Ip(text), 9001, any).ok() || std::string(text) == "0.0.0.0");
  }
  EXPECT_TRUE(CheckDestination(Ip("8.8.8.8"), 9000, any).ok());
}

// Verifies CIDR parsing: good forms, and typed errors for hostile ones.
TEST(SsrfGuardTest, ParsesCidrs) {
  for (const char* good :
       {"10.20.0.0/16", "0.0.0.0/0", "10.1.2.3/32", "fd00::/8", "::/0", "::ffff:10.0.0.0/104"}) {
    SCOPED_TRACE(good);
    EXPECT_TRUE(IpNetwork::Parse(good).has_value());
  }
  EXPECT_EQ(Net("::ffff:10.0.0.0/104").ToString(), "10.0.0.0/8");
  for (const char* bad :
       {"10.20.0.0", "10.20.1.0/16", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "/8", "host/8",
        "fd00::/129", "10.0.0.0/8x", "10.0.0.0/ 8", "::ffff:10.0.0.0/64", ""}) {
    SCOPED_TRACE(bad);
    Result<IpNetwork> n = IpNetwork::Parse(bad);
    ASSERT_FALSE(n.has_value());
    EXPECT_EQ(n.error().code(), Status::Code::kInvalidArgument);
  }
}

// Verifies that names and odd IPv4 spellings are refused as InvalidArgument, not resolved.
TEST(SsrfGuardTest, RefusesNonLiterals) {
  const SsrfPolicy allow_all{.allow_private_networks = true, .allow_cloud_metadata = true};
  for (const char* text : {"localhost", "metadata.google.internal", "127.1", "0x7f000001",
                           "2130706433", "0177.0.0.1", ""}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(CheckDestination(text, allow_all).code(), Status::Code::kInvalidArgument);
  }
}

// Verifies the sockaddr overload, as curl's open-socket callback would call it.
TEST(SsrfGuardTest, ChecksSockaddr) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(0xA9FEA9FE);
  const auto* addr = reinterpret_cast<const sockaddr*>(&in);
  EXPECT_EQ(CheckDestination(addr, sizeof(in), SsrfPolicy{}).code(), Status::Code::kRejected);
  in.sin_addr.s_addr = htonl(0x08080808);
  EXPECT_TRUE(CheckDestination(addr, sizeof(in), SsrfPolicy{}).ok());

  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:10.1.2.3", &in6.sin6_addr), 1);
  const auto* addr6 = reinterpret_cast<const sockaddr*>(&in6);
  EXPECT_EQ(CheckDestination(addr6, sizeof(in6), SsrfPolicy{}).code(), Status::Code::kRejected);
  EXPECT_TRUE(CheckDestination(addr6, sizeof(in6), {.allow_private_networks = true}).ok());
}

}  // namespace
}  // namespace egress::adapters
