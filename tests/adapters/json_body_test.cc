#include "adapters/json_body.h"

#include <string>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// {"a":[[...]]} with `depth` levels of objects and arrays.
std::string Nested(size_t depth) {
  return "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
}

// Verifies no tree deeper than kMaxJsonDepth is built, so no later dump of it can recurse that
// far: a stored payload over the bound is an InvalidArgument (the delivery is dead, the loop
// goes on), a response body over it is garbage.
TEST(JsonBodyTest, RefusesTextDeeperThanTheBound) {
  EXPECT_TRUE(ParseJsonObject(Nested(kMaxJsonDepth), "payload").has_value());
  for (size_t depth : {kMaxJsonDepth + 1, size_t{100'000}}) {
    auto refused = ParseJsonObject(Nested(depth), "payload");
    ASSERT_FALSE(refused.has_value()) << depth;
    EXPECT_EQ(refused.error().message(), "payload is nested deeper than 512 levels");
    EXPECT_FALSE(ParseJsonLenient(Nested(depth)).has_value()) << depth;
  }
  EXPECT_TRUE(ParseJsonLenient(Nested(3)).has_value());
  EXPECT_TRUE(ParseJsonLenient("\xEF\xBB\xBF[1]").has_value());
  EXPECT_FALSE(ParseJsonLenient("{").has_value());
}

// Verifies IsJsonPointer (RFC 6901): "" and "/..." with only ~0 and ~1 escapes.
TEST(JsonBodyTest, IsJsonPointer) {
  for (const char* ok : {"", "/", "/a", "/a/0/b", "/a~0b", "/a~1b", "//", "/~01", "/ok"}) {
    EXPECT_TRUE(IsJsonPointer(ok)) << ok;
  }
  for (const char* bad : {"a", "a/b", "#/a", "/a~", "/a~2", "/~x", "/a/~", " /a"}) {
    EXPECT_FALSE(IsJsonPointer(bad)) << bad;
  }
}

// Verifies AtPointer walks members and array elements: "" is the whole document, ~1 is '/' and
// ~0 is '~' in a member name (decoded in that order: "~01" is "~1"), an empty member name.
TEST(JsonBodyTest, AtPointerWalksMembersAndElements) {
  const nlohmann::json doc =
      nlohmann::json::parse(R"({"ok":true,"result":{"message_id":42,"list":[10,{"id":"x"},[7]]},)"
                            R"("a/b":1,"m~n":2,"~1":3,"":4,"parameters":{"retry_after":35}})");
  ASSERT_NE(AtPointer(doc, ""), nullptr);
  EXPECT_EQ(*AtPointer(doc, ""), doc);
  EXPECT_EQ(*AtPointer(doc, "/ok"), true);
  EXPECT_EQ(*AtPointer(doc, "/result/message_id"), 42);
  EXPECT_EQ(*AtPointer(doc, "/parameters/retry_after"), 35);
  EXPECT_EQ(*AtPointer(doc, "/result/list/0"), 10);
  EXPECT_EQ(*AtPointer(doc, "/result/list/1/id"), "x");
  EXPECT_EQ(*AtPointer(doc, "/result/list/2/0"), 7);
  EXPECT_EQ(*AtPointer(doc, "/a~1b"), 1);
  EXPECT_EQ(*AtPointer(doc, "/m~0n"), 2);
  EXPECT_EQ(*AtPointer(doc, "/~01"), 3);
  EXPECT_EQ(*AtPointer(doc, "/"), 4);
}

// Verifies AtPointer answers null, never throws, for what is not there: a missing member, an
// index past the end, a leading zero, a sign or a non-digit index, '-' (RFC 6901's "past the
// end"), a step into a number, string, boolean or null, and text that is no pointer.
TEST(JsonBodyTest, AtPointerRefusesWhatIsNotThere) {
  const nlohmann::json doc = nlohmann::json::parse(
      R"({"ok":true,"n":5,"s":"text","z":null,"list":[10,11],"o":{"0":"zero"}})");
  for (const char* missing :
       {"/missing", "/ok/x", "/n/0", "/s/0", "/z/a", "/list/2", "/list/01", "/list/00", "/list/-1",
        "/list/+1", "/list/-", "/list/1x", "/list/", "/list/99999999999999999999", "/o/1", "/a/b/c",
        "list", "/list/~2", "/OK"}) {
    EXPECT_EQ(AtPointer(doc, missing), nullptr) << missing;
  }
  // A member named "0" of an object is a member, not an index.
  ASSERT_NE(AtPointer(doc, "/o/0"), nullptr);
  EXPECT_EQ(*AtPointer(doc, "/o/0"), "zero");
  // A document that is not a container has only "".
  const nlohmann::json number = 7;
  EXPECT_EQ(AtPointer(number, "/0"), nullptr);
  ASSERT_NE(AtPointer(number, ""), nullptr);
  EXPECT_EQ(*AtPointer(number, ""), 7);
  // A top-level array.
  const nlohmann::json array = nlohmann::json::parse(R"([true,[1,2]])");
  EXPECT_EQ(*AtPointer(array, "/1/1"), 2);
  EXPECT_EQ(AtPointer(array, "/ok"), nullptr);
}

}  // namespace
}  // namespace egress::adapters
