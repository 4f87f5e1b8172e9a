#include "adapters/json_text.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/text_mutator.h"

namespace egress::adapters {
namespace {

bool NlohmannAccepts(std::string_view text) { return nlohmann::json::accept(text); }

// Verifies hand-picked texts, each checked against nlohmann::json::accept too.
TEST(JsonTextTest, Table) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {R"({"type":"message.created","data":{"text":"hi","n":[1,2.5,-3e2,true,false,null]}})", true},
      {"  [ ]  ", true},
      {"{}", true},
      {"0", true},
      {"-0.0e+0", true},
      {"\"\"", true},
      {"\xEF\xBB\xBF{}", true},  // byte order mark
      {"\"\\u00e9\\uD83D\\uDE00\\n\\/\"", true},
      {"\"h\xC3\xA9llo \xF0\x9F\x98\x80\"", true},
      {"123456789012345678901234567890", true},
      {"1e308", true},
      {"1e-400", true},  // underflows to zero: finite
      {"", false},
      {"   ", false},
      {"{", false},
      {"{\"a\"}", false},
      {"{\"a\":1,}", false},
      {"[1,]", false},
      {"[1 2]", false},
      {"01", false},
      {"1.", false},
      {".5", false},
      {"+1", false},
      {"-", false},
      {"1e", false},
      {"1e400", false},  // overflows a double
      {std::string(400, '9'), false},
      {"tru", false},
      {"truex", false},
      {"nul", false},
      {"\"\\uD83D\"", false},  // high surrogate alone
      {"\"\\uDE00\"", false},  // low surrogate alone
      {"\"\\x\"", false},
      {"\"tab\there\"", false},
      {"\"\xC0\xAF\"", false},          // overlong
      {"\"\xED\xA0\x80\"", false},      // encoded surrogate
      {"\"\xF4\x90\x80\x80\"", false},  // above U+10FFFF
      {"\"\xE2\x82\"", false},          // truncated
      {"\xEF\xBB{}", false},
      {"{} {}", false},
      {std::string(10000, '[') + std::string(10000, ']'), true},  // no depth limit
  };
  // A raw NUL byte is never JSON; nlohmann::json::accept takes it for the end of the input.
  EXPECT_FALSE(IsJsonText(std::string("[1]\0", 4)));
  EXPECT_FALSE(IsJsonText(std::string("[1]\0junk", 8)));
  EXPECT_FALSE(IsJsonText(std::string("\0", 1)));
  for (const auto& [text, valid] : cases) {
    EXPECT_EQ(IsJsonText(text), valid) << text.substr(0, 60);
    EXPECT_EQ(NlohmannAccepts(text), valid)
        << "nlohmann disagrees with the table: " << text.substr(0, 60);
  }
}

// Verifies the same verdict as nlohmann::json::accept on many mutations of valid documents
// (bytes inserted, deleted and replaced from an alphabet of JSON's tricky pieces).
TEST(JsonTextTest, AgreesWithNlohmannOnMutations) {
  const std::vector<std::string> seeds = {
      R"({"type":"message.created","msg_id":"m1","data":{"text":"hello","n":12.5e-3}})",
      R"([true,false,null,-0,1E+2,"\u00e9\ud83d\ude00",{"":[]}])",
      "\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\"",
      R"({"a":{"b":{"c":[[[1]]]}},"d":"\\\/\b\f\n\r\t"})",
  };
  const std::vector<std::string> pieces = {"{",
                                           "}",
                                           "[",
                                           "]",
                                           ",",
                                           ":",
                                           "\"",
                                           "\\",
                                           "\\u",
                                           "D83D",
                                           "DE00",
                                           "0",
                                           "1",
                                           "9",
                                           "-",
                                           "+",
                                           ".",
                                           "e",
                                           "E",
                                           " ",
                                           "\t",
                                           "\n",
                                           "t",
                                           "true",
                                           "null",
                                           "\xC3",
                                           "\xA9",
                                           "\xE2\x82",
                                           "\xF0",
                                           "\x80",
                                           "\xEF\xBB\xBF",
                                           std::string(1, '\0'),
                                           "\x1F",
                                           "1e999"};
  TextMutator mutator;
  int agreed = 0, valid = 0;
  for (int round = 0; round < 30000; ++round) {
    const std::string text = mutator.Mutate(seeds, pieces);
    // nlohmann stops reading at a NUL byte (accepting "[1]\0junk"); a raw NUL is never JSON.
    const bool expected = text.find('\0') == std::string::npos && NlohmannAccepts(text);
    ASSERT_EQ(IsJsonText(text), expected) << "text: " << text;
    ++agreed;
    valid += expected ? 1 : 0;
  }
  EXPECT_EQ(agreed, 30000);
  EXPECT_GT(valid, 100);  // the mutations do not only produce garbage
}

}  // namespace
}  // namespace egress::adapters
