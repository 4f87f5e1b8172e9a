#include "adapters/header_list.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// Verifies the member forms of every RateLimit draft.
TEST(HeaderListTest, ReadsEveryDraftForm) {
  std::vector<HeaderListMember> m =
      ParseHeaderList(R"("minute";q=120;w=60, day;q=5000 ; w=86400, 100;w=1, limit=7)");
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].name, "minute");
  EXPECT_EQ(m[0].Param("q"), "120");
  EXPECT_EQ(m[0].Param("W"), "60");
  EXPECT_EQ(m[1].name, "day");
  EXPECT_EQ(m[1].Param("w"), "86400");
  EXPECT_TRUE(m[2].name.empty());
  EXPECT_EQ(m[2].number, 100);
  EXPECT_EQ(m[2].Param("w"), "1");
  EXPECT_EQ(m[3].name, "limit");
  EXPECT_EQ(m[3].value, "7");
  EXPECT_EQ(m[3].Param("q"), std::nullopt);
}

// Verifies that quoted commas and semicolons stay inside the string, escapes included.
TEST(HeaderListTest, RespectsQuotes) {
  std::vector<HeaderListMember> m = ParseHeaderList(R"("a,b;c";r=1, "x\"y";r=2)");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].name, "a,b;c");
  EXPECT_EQ(m[0].Param("r"), "1");
  EXPECT_EQ(m[1].name, R"(x\"y)");
  EXPECT_EQ(m[1].Param("r"), "2");
}

// Verifies that unusable members are skipped and the rest survive.
TEST(HeaderListTest, SkipsGarbageMembers) {
  struct Case {
    std::string text;
    size_t members;
  };
  const Case cases[] = {
      {"", 0},
      {",,,", 0},
      {";;;", 0},
      {"(a b);r=1", 0},
      {"\"open;r=1", 0},
      {"\"a\"b\";r=1", 0},
      {"\"a\\\";r=1", 0},
      {"=5", 0},
      {"ok;r=1,,(x),\"y\";r=2", 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseHeaderList(c.text).size(), c.members);
  }
  EXPECT_EQ(ParseHeaderList(std::string(1000, ',') + std::string(200 * 4, 'a')).size(), 1u);
  std::string many;
  for (int i = 0; i < 200; ++i) {
    many += "a;r=1,";
  }
  EXPECT_EQ(ParseHeaderList(many).size(), kMaxHeaderListMembers);
}

}  // namespace
}  // namespace egress::adapters
