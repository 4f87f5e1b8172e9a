#include "dispatcher/base/hex.h"

#include <gtest/gtest.h>

namespace egress {
namespace {

// Verifies every byte round-trips through lowercase hex, both cases decode, and odd lengths and
// non-digits are refused.
TEST(HexTest, EncodesAndDecodes) {
  std::string all;
  for (int b = 0; b < 256; ++b) {
    all.push_back(static_cast<char>(b));
  }
  const std::string hex = HexEncode(all);
  ASSERT_EQ(hex.size(), 512u);
  EXPECT_EQ(hex.substr(0, 6), "000102");
  EXPECT_EQ(hex.substr(506), "fdfeff");
  EXPECT_EQ(*HexDecode(hex), all);
  EXPECT_EQ(*HexDecode("ABcd"), "\xab\xcd");
  EXPECT_EQ(*HexDecode(""), "");
  for (std::string_view bad : {"a", "abc", "0g", "g0", " 0", "0x12"}) {
    EXPECT_FALSE(HexDecode(bad).has_value()) << bad;
  }
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('/'), -1);
  EXPECT_EQ(HexDigitValue(':'), -1);
  EXPECT_EQ(HexDigitValue('@'), -1);
  EXPECT_EQ(HexDigitValue('G'), -1);
}

}  // namespace
}  // namespace egress
