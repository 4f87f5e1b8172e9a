#include "adapters/base64.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// Verifies the RFC 4648 section 10 test vectors in both directions.
TEST(Base64Test, RoundTripsRfc4648Vectors) {
  struct Case {
    std::string plain;
    std::string encoded;
  };
  const Case cases[] = {{"", ""},
                        {"f", "Zg=="},
                        {"fo", "Zm8="},
                        {"foo", "Zm9v"},
                        {"foob", "Zm9vYg=="},
                        {"fooba", "Zm9vYmE="},
                        {"foobar", "Zm9vYmFy"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.plain);
    EXPECT_EQ(Base64Encode(c.plain), c.encoded);
    EXPECT_EQ(Base64Decode(c.encoded), std::optional<std::string>(c.plain));
  }
}

// Verifies that binary bytes, including NUL and 0xff, survive a round trip.
TEST(Base64Test, RoundTripsBinary) {
  std::string bytes("\x00\xff\x10\x80\x7f", 5);
  EXPECT_EQ(Base64Decode(Base64Encode(bytes)), std::optional<std::string>(bytes));
}

// Verifies that missing padding is accepted and malformed input is refused.
TEST(Base64Test, DecodesLenientPaddingRefusesGarbage) {
  EXPECT_EQ(Base64Decode("Zg"), std::optional<std::string>("f"));
  EXPECT_EQ(Base64Decode("Zm8"), std::optional<std::string>("fo"));
  const char* bad[] = {"Z", "Zm9v!", "Zm=v", "Z===", "Zm9v Zm9v", "Zm9vYg===", "-_-_"};
  for (const char* text : bad) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Base64Decode(text), std::nullopt);
  }
}

}  // namespace
}  // namespace egress::adapters
