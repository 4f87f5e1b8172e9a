#include "dispatcher/service/api/json_writer.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace egress::service {
namespace {

using nlohmann::json;

// Verifies nested objects and arrays get their commas and parse back to what was written.
TEST(JsonWriterTest, NestedContainersParseBack) {
  std::string out;
  JsonWriter j(out);
  j.BeginObject();
  j.Key("list").BeginArray();
  for (int i = 0; i < 3; ++i) {
    j.BeginObject().Key("n").Int(i).Key("odd").Bool(i % 2 == 1).Key("e").BeginObject().EndObject();
    j.EndObject();
  }
  j.BeginArray().EndArray();
  j.Null();
  j.EndArray();
  j.Key("max").Uint(std::numeric_limits<uint64_t>::max());
  j.Key("min").Int(std::numeric_limits<int64_t>::min());
  j.Key("next").Null();
  j.EndObject();
  EXPECT_EQ(out, R"({"list":[{"n":0,"odd":false,"e":{}},{"n":1,"odd":true,"e":{}},)"
                 R"({"n":2,"odd":false,"e":{}},[],null],"max":18446744073709551615,)"
                 R"("min":-9223372036854775808,"next":null})");
  const json parsed = json::parse(out);
  EXPECT_EQ(parsed["list"].size(), 5u);
  EXPECT_EQ(parsed["max"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
}

// Verifies hostile strings (quotes, backslashes, control bytes, invalid UTF-8) in keys and values
// come out as nlohmann escapes them, so the text always parses.
TEST(JsonWriterTest, HostileStringsAreEscapedAsNlohmannDoes) {
  const std::string hostile[] = {
      "plain",
      "",
      "quote\"in",
      "back\\slash",
      std::string("nul\0byte", 8),
      "tab\there",
      "caf\xc3\xa9",
      "bad\xff\xfe utf8",
      "\xe2\x82",
      "</script>",
  };
  for (const std::string& text : hostile) {
    std::string out;
    JsonWriter j(out);
    j.BeginObject().Key(text).String(text).EndObject();
    const std::string expected = json(text).dump(-1, ' ', false, json::error_handler_t::replace);
    EXPECT_EQ(out, "{" + expected + ":" + expected + "}") << text;
    EXPECT_TRUE(json::accept(out)) << out;
  }
}

}  // namespace
}  // namespace egress::service
