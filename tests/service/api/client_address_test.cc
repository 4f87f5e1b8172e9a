#include "dispatcher/service/api/client_address.h"

#include <gtest/gtest.h>

namespace egress::service {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::make_address;

TrustedProxies Proxies(std::vector<std::string> cidrs) {
  Result<TrustedProxies> parsed = TrustedProxies::Parse(cidrs);
  EXPECT_TRUE(parsed.has_value()) << parsed.error().ToString();
  return *parsed;
}

http::fields Fields(std::initializer_list<std::pair<std::string, std::string>> lines) {
  http::fields f;
  for (const auto& [name, value] : lines) {
    f.insert(name, value);
  }
  return f;
}

// Verifies that a peer outside trusted_proxies is the client whatever its headers say: anyone
// can write X-Forwarded-For.
TEST(ClientAddressTest, UntrustedPeerIsTheClient) {
  const TrustedProxies proxies = Proxies({"10.0.0.0/8"});
  EXPECT_EQ(proxies.ClientOf(
                make_address("192.0.2.7"),
                Fields({{"X-Forwarded-For", "198.51.100.1"}, {"Forwarded", "for=198.51.100.2"}})),
            make_address("192.0.2.7"));
  EXPECT_EQ(TrustedProxies().ClientOf(make_address("10.1.1.1"),
                                      Fields({{"X-Forwarded-For", "198.51.100.1"}})),
            make_address("10.1.1.1"));
}

// Verifies the rightmost untrusted hop: hops a client wrote itself sit left of what our proxies
// appended, so the walk from the right stops at the first address that is not ours.
TEST(ClientAddressTest, RightmostUntrustedHopOfXForwardedForIsTheClient) {
  const TrustedProxies proxies = Proxies({"10.0.0.0/8", "192.168.1.0/24"});
  EXPECT_EQ(proxies.ClientOf(make_address("10.0.0.2"),
                             Fields({{"X-Forwarded-For", "6.6.6.6, 203.0.113.9, 192.168.1.4"}})),
            make_address("203.0.113.9"));
  // Several header lines are one list, in order.
  EXPECT_EQ(proxies.ClientOf(
                make_address("10.0.0.2"),
                Fields({{"X-Forwarded-For", "6.6.6.6"}, {"X-Forwarded-For", "203.0.113.9:4711"}})),
            make_address("203.0.113.9"));
  // Only our proxies: the leftmost of them.
  EXPECT_EQ(proxies.ClientOf(make_address("10.0.0.2"),
                             Fields({{"X-Forwarded-For", "10.9.9.9, 192.168.1.4"}})),
            make_address("10.9.9.9"));
  // No header: the proxy itself.
  EXPECT_EQ(proxies.ClientOf(make_address("10.0.0.2"), Fields({})), make_address("10.0.0.2"));
}

// Verifies RFC 7239 Forwarded: for= of each element, quoted IPv6 with a port, other parameters
// ignored; it wins over X-Forwarded-For when both are present.
TEST(ClientAddressTest, ForwardedIsReadAndWins) {
  const TrustedProxies proxies = Proxies({"10.0.0.0/8"});
  EXPECT_EQ(proxies.ClientOf(make_address("10.0.0.2"),
                             Fields({{"Forwarded",
                                      "for=6.6.6.6, for=\"[2001:db8::5]:4711\";proto=https, "
                                      "by=10.0.0.1;FOR=10.0.0.3"},
                                     {"X-Forwarded-For", "198.51.100.1"}})),
            make_address("2001:db8::5"));
}

// Verifies that a hop which is not an address ("unknown", an obfuscated name, garbage) ends the
// walk at the trusted hop right of it: nothing left of it can be believed.
TEST(ClientAddressTest, UnnamedHopStopsAtTheTrustedHopRightOfIt) {
  const TrustedProxies proxies = Proxies({"10.0.0.0/8"});
  EXPECT_EQ(proxies.ClientOf(make_address("10.0.0.2"),
                             Fields({{"Forwarded", "for=6.6.6.6, for=unknown, for=10.0.0.7"}})),
            make_address("10.0.0.7"));
  EXPECT_EQ(proxies.ClientOf(make_address("10.0.0.2"),
                             Fields({{"X-Forwarded-For", "6.6.6.6, ';DROP TABLE"}})),
            make_address("10.0.0.2"));
  EXPECT_EQ(proxies.ClientOf(make_address("10.0.0.2"),
                             Fields({{"X-Forwarded-For", std::string(10'000, ',')}})),
            make_address("10.0.0.2"));
}

// Verifies the hop bound: a header of thousands of trusted hops is read only kMaxHops deep.
TEST(ClientAddressTest, AtMostMaxHopsAreRead) {
  const TrustedProxies proxies = Proxies({"10.0.0.0/8"});
  std::string list = "203.0.113.9";
  for (size_t i = 0; i < TrustedProxies::kMaxHops + 5; ++i) {
    list += ", 10.0.0.1";
  }
  EXPECT_EQ(proxies.ClientOf(make_address("10.0.0.2"), Fields({{"X-Forwarded-For", list}})),
            make_address("10.0.0.1"));
}

// Verifies IPv4-mapped addresses: a mapped peer is matched as the IPv4 address it carries.
TEST(ClientAddressTest, MappedPeerIsMatchedAsIpv4) {
  const TrustedProxies proxies = Proxies({"10.0.0.0/8"});
  EXPECT_TRUE(proxies.Trusts(make_address("::ffff:10.1.2.3")));
  EXPECT_FALSE(proxies.Trusts(make_address("::ffff:11.1.2.3")));
  EXPECT_FALSE(proxies.Trusts(boost::asio::ip::address()));
}

// Verifies the parse errors: the entry that does not parse is named.
TEST(ClientAddressTest, BadCidrIsNamed) {
  Result<TrustedProxies> bad = TrustedProxies::Parse({"10.0.0.0/8", "10.1.0.0/8"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("'10.1.0.0/8'"), std::string::npos) << bad.error().message();
}

// Verifies the per-address key: IPv4 and its mapped form are one key; IPv6 addresses of one /64
// are one key, of another /64 another.
TEST(ClientAddressTest, AddressKeyGroupsAnIpv6Slash64) {
  EXPECT_EQ(AddressKey(make_address("192.0.2.1")), AddressKey(make_address("::ffff:192.0.2.1")));
  EXPECT_NE(AddressKey(make_address("192.0.2.1")), AddressKey(make_address("192.0.2.2")));
  EXPECT_EQ(AddressKey(make_address("2001:db8:1:2::1")),
            AddressKey(make_address("2001:db8:1:2:ffff::9")));
  EXPECT_NE(AddressKey(make_address("2001:db8:1:2::1")),
            AddressKey(make_address("2001:db8:1:3::1")));
}

}  // namespace
}  // namespace egress::service
