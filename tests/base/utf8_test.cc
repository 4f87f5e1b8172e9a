#include "dispatcher/base/utf8.h"

#include <gtest/gtest.h>

namespace egress {
namespace {

// Verifies the RFC 3629 edges: ASCII and the four lengths pass; overlong forms, surrogates,
// code points past U+10FFFF, stray continuation bytes and cut sequences do not, and each bad
// byte becomes one U+FFFD.
TEST(Utf8Test, ValidatesAndReplaces) {
  for (const char* good : {"", "acme", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                           "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"}) {
    EXPECT_TRUE(IsValidUtf8(good)) << good;
    EXPECT_EQ(ToValidUtf8(good), good);
  }
  for (const char* bad : {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80",
                          "\xff", "\xe2\x82", "a\xc3"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
    EXPECT_TRUE(IsValidUtf8(ToValidUtf8(bad))) << bad;
  }
  EXPECT_EQ(ToValidUtf8("a\xff"
                        "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(ToValidUtf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");
}

}  // namespace
}  // namespace egress
