#include "adapters/json_reader.h"

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace egress::adapters {
namespace {

// Verifies a walk over an object: keys and strings decoded, other values skipped with their
// spans, whitespace between tokens reported, the end reached.
TEST(JsonReaderTest, WalksAnObject) {
  const std::string text =
      R"( { "a" : "x\"y" , "b\u0063" : [1, {"z": null}] , "n": -1.5e3, "o": {"k":"v"} } )";
  JsonReader r(text);
  ASSERT_EQ(r.Peek(), '{');
  ASSERT_TRUE(r.EnterObject());
  std::string key, value;
  ASSERT_TRUE(r.NextKey(key));
  EXPECT_EQ(key, "a");
  ASSERT_TRUE(r.ReadString(value));
  EXPECT_EQ(value, "x\"y");
  ASSERT_TRUE(r.NextKey(key));
  EXPECT_EQ(key, "bc");
  std::string_view span;
  bool spaced = false;
  ASSERT_TRUE(r.SkipValue(&span, &spaced));
  EXPECT_EQ(span, R"([1, {"z": null}])");
  EXPECT_TRUE(spaced);
  ASSERT_TRUE(r.NextKey(key));
  EXPECT_EQ(key, "n");
  ASSERT_TRUE(r.SkipValue(&span, &spaced));
  EXPECT_EQ(span, "-1.5e3");
  EXPECT_FALSE(spaced);
  ASSERT_TRUE(r.NextKey(key));
  ASSERT_TRUE(r.SkipValue(&span, &spaced));
  EXPECT_EQ(span, R"({"k":"v"})");
  EXPECT_FALSE(spaced);
  EXPECT_FALSE(r.NextKey(key));
  EXPECT_FALSE(r.failed());
  EXPECT_TRUE(r.AtEnd());
}

// Verifies arrays walk element by element, empty containers end at once, and a missing comma
// fails the reader for good.
TEST(JsonReaderTest, WalksArraysAndFailsForGood) {
  JsonReader r(R"([{}, [], "s"])");
  ASSERT_TRUE(r.EnterArray());
  ASSERT_TRUE(r.NextElement());
  ASSERT_TRUE(r.EnterObject());
  std::string key;
  EXPECT_FALSE(r.NextKey(key));
  ASSERT_TRUE(r.NextElement());
  ASSERT_TRUE(r.EnterArray());
  EXPECT_FALSE(r.NextElement());
  ASSERT_TRUE(r.NextElement());
  std::string s;
  ASSERT_TRUE(r.ReadString(s));
  EXPECT_EQ(s, "s");
  EXPECT_FALSE(r.NextElement());
  EXPECT_TRUE(r.AtEnd());

  JsonReader bad(R"({"a":1 "b":2})");
  ASSERT_TRUE(bad.EnterObject());
  ASSERT_TRUE(bad.NextKey(key));
  ASSERT_TRUE(bad.SkipValue());
  EXPECT_FALSE(bad.NextKey(key));
  EXPECT_TRUE(bad.failed());
  EXPECT_EQ(bad.Peek(), 0);
  EXPECT_FALSE(bad.SkipValue());
  EXPECT_FALSE(bad.AtEnd());
}

// Verifies decoded strings equal nlohmann's for every escape form, UTF-8 and surrogate pairs.
TEST(JsonReaderTest, DecodesStringsAsNlohmann) {
  const std::vector<std::string> texts = {
      R"("plain")",
      R"("\"\\\/\b\f\n\r\t")",
      R"("\u0041\u00e9\u20AC\uD83D\uDE00\u0000x")",
      "\"h\xC3\xA9llo \xF0\x9F\x98\x80\"",
      R"("")",
  };
  for (const std::string& text : texts) {
    JsonReader r(text);
    std::string out;
    ASSERT_TRUE(r.ReadString(out)) << text;
    EXPECT_TRUE(r.AtEnd());
    EXPECT_EQ(out, nlohmann::json::parse(text).get<std::string>()) << text;
  }
  JsonReader lone(R"("\uDE00")");
  std::string out;
  EXPECT_FALSE(lone.ReadString(out));
}

// Verifies CompactJson drops whitespace between tokens only, leaving strings as they were.
TEST(JsonReaderTest, CompactsBetweenTokensOnly) {
  EXPECT_EQ(CompactJson(" {\n\t\"a b\" : [ 1 , \"x \\\" y\" ] ,\r\"c\":{ } } "),
            R"({"a b":[1,"x \" y"],"c":{}})");
  EXPECT_EQ(CompactJson(R"({"a":"\\"})"), R"({"a":"\\"})");
  EXPECT_EQ(CompactJson(R"({"a":"\\" , "b" : 1})"), R"({"a":"\\","b":1})");
}

// Verifies SkipValue reports the deepest nesting of what it skipped, also 100,000 levels deep
// (read without recursion).
TEST(JsonReaderTest, SkipValueReportsDepth) {
  struct Case {
    std::string text;
    size_t depth;
  };
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  for (const Case& c : std::vector<Case>{{"1", 0},
                                         {"\"[{\"", 0},
                                         {"{}", 1},
                                         {"[]", 1},
                                         {"[1,2]", 1},
                                         {R"({"a":[{}],"b":1})", 3},
                                         {R"([[],[[[]]],[]])", 4},
                                         {deep, 100'000}}) {
    JsonReader r(c.text);
    size_t depth = 99;
    ASSERT_TRUE(r.SkipValue(nullptr, nullptr, &depth)) << c.text.substr(0, 40);
    EXPECT_EQ(depth, c.depth) << c.text.substr(0, 40);
  }
}

}  // namespace
}  // namespace egress::adapters
