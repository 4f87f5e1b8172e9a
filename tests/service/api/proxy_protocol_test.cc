#include "dispatcher/service/api/proxy_protocol.h"

#include <string>

#include <gtest/gtest.h>

namespace egress::service {
namespace {

const std::string kV2Sig("\r\n\r\n\0\r\nQUIT\n", 12);

// A version 2 header: command (0 LOCAL, 1 PROXY), family byte, address block.
std::string V2(uint8_t command, uint8_t family, const std::string& block) {
  std::string h = kV2Sig;
  h += static_cast<char>(0x20 | command);
  h += static_cast<char>(family);
  h += static_cast<char>(block.size() >> 8);
  h += static_cast<char>(block.size() & 0xFF);
  return h + block;
}

// Verifies version 1: TCP4 and TCP6 give the source; UNKNOWN gives none; the header's size is
// what to drop before HTTP; a prefix asks for more.
TEST(ProxyProtocolTest, ReadsVersionOne) {
  const std::string tcp4 = "PROXY TCP4 203.0.113.7 10.0.0.1 51234 443\r\nGET / HTTP/1.1\r\n";
  auto h = ParseProxyHeader(tcp4);
  ASSERT_TRUE(h.has_value()) << h.error().message();
  ASSERT_TRUE(h->has_value());
  EXPECT_EQ((*h)->size, tcp4.find("GET"));
  EXPECT_EQ((*h)->source->to_string(), "203.0.113.7");
  h = ParseProxyHeader("PROXY TCP6 2001:db8::7 2001:db8::1 51234 443\r\n");
  ASSERT_TRUE(h.has_value() && h->has_value());
  EXPECT_EQ((*h)->source->to_string(), "2001:db8::7");
  h = ParseProxyHeader("PROXY UNKNOWN whatever\r\n");
  ASSERT_TRUE(h.has_value() && h->has_value());
  EXPECT_FALSE((*h)->source.has_value());
  for (size_t n = 0; n < tcp4.find("\r\n") + 1; ++n) {
    auto partial = ParseProxyHeader(tcp4.substr(0, n));
    ASSERT_TRUE(partial.has_value()) << n << " " << partial.error().message();
    EXPECT_FALSE(partial->has_value()) << n;
  }
}

// Verifies version 2: PROXY over IPv4 and IPv6 gives the source, LOCAL none, TLVs after the
// addresses are skipped with them; a prefix asks for more.
TEST(ProxyProtocolTest, ReadsVersionTwo) {
  const std::string v4 = V2(1, 0x11,
                            std::string("\xcb\x00\x71\x07\x0a\x00\x00\x01\xc8\x22\x01\xbb", 12) +
                                std::string("\x04\x00\x01\x00", 4));  // a TLV
  auto h = ParseProxyHeader(v4 + "GET");
  ASSERT_TRUE(h.has_value()) << h.error().message();
  ASSERT_TRUE(h->has_value());
  EXPECT_EQ((*h)->size, v4.size());
  EXPECT_EQ((*h)->source->to_string(), "203.0.113.7");
  std::string v6_block(36, '\0');
  v6_block[0] = '\x20';
  v6_block[1] = '\x01';
  v6_block[2] = '\x0d';
  v6_block[3] = '\xb8';
  v6_block[15] = '\x07';
  h = ParseProxyHeader(V2(1, 0x21, v6_block));
  ASSERT_TRUE(h.has_value() && h->has_value());
  EXPECT_EQ((*h)->source->to_string(), "2001:db8::7");
  h = ParseProxyHeader(V2(0, 0x00, ""));
  ASSERT_TRUE(h.has_value() && h->has_value());
  EXPECT_FALSE((*h)->source.has_value());
  for (size_t n = 0; n < v4.size(); ++n) {
    auto partial = ParseProxyHeader(v4.substr(0, n));
    ASSERT_TRUE(partial.has_value()) << n << " " << partial.error().message();
    EXPECT_FALSE(partial->has_value()) << n;
  }
}

// Verifies that everything else is a typed error naming the problem: plain HTTP, bad fields,
// lengths past the bound, other versions and commands.
TEST(ProxyProtocolTest, RefusesWhatIsNotAHeader) {
  const std::string refused[] = {
      "GET / HTTP/1.1\r\n",
      "PROXY TCP4 203.0.113.7 10.0.0.1 51234\r\n",
      "PROXY TCP4 2001:db8::7 10.0.0.1 1 2\r\n",
      "PROXY TCP4 203.0.113.7 10.0.0.1 65536 1\r\n",
      "PROXY TCP4 203.0.113.7 10.0.0.1 01 1\r\n",
      "PROXY TCP4 not-an-address 10.0.0.1 1 2\r\n",
      "PROXY UDP4 203.0.113.7 10.0.0.1 1 2\r\n",
      "PROXY TCP4  203.0.113.7 10.0.0.1 1 2\r\n",
      "PROXY " + std::string(200, 'A'),
      V2(1, 0x11, "short"),
      V2(2, 0x11, std::string(12, '\0')),
      V2(1, 0x51, std::string(12, '\0')),
      V2(1, 0x11, std::string(kMaxProxyHeaderBytes, '\0')),
      kV2Sig + std::string("\x31\x11\x00\x0c", 4) + std::string(12, '\0'),
  };
  for (const std::string& bytes : refused) {
    auto h = ParseProxyHeader(bytes);
    ASSERT_FALSE(h.has_value()) << bytes;
    EXPECT_EQ(h.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(h.error().message().rfind("PROXY header: ", 0), 0u) << h.error().message();
  }
}

}  // namespace
}  // namespace egress::service
