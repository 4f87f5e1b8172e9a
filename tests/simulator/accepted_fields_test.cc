#include "tests/simulator/accepted_fields.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace egress::sim {
namespace {

// Verifies the SAX scan finds what the parsed document gives, for valid and invalid bodies:
// member types, repeated and nested names, escapes, big numbers, non-objects.
TEST(AcceptedFieldsTest, ScanMatchesParsedDocument) {
  const std::vector<std::string> bodies = {
      R"({"type":"message.created","msg_id":"d17","data":{"text":"hello"}})",
      R"({"msg_id":42,"seq":7,"ordering_key":"chat-1"})",
      R"({"msg_id":-3,"seq":-9223372036854775808,"ordering_key":12})",
      R"({"seq":18446744073709551615,"msg_id":18446744073709551615})",
      R"({"seq":18446744073709551616,"msg_id":1.5})",
      R"({"seq":1.0,"ordering_key":null})",
      R"({"seq":"4","ordering_key":{"a":1},"msg_id":[1]})",
      R"({"msg_id":"a","msg_id":"b","seq":1,"seq":{}})",
      R"({"data":{"msg_id":"nested","seq":1,"ordering_key":"x"},"list":[{"seq":2}]})",
      R"({"msg\u005fid":"esc\"aped\u00e9\ud83d\ude00","se\u0071":3})",
      R"({"msg_id":true,"ordering_key":false,"seq":null})",
      "\xEF\xBB\xBF{\"msg_id\":\"bom\"}",
      R"( { "msg_id" : "spaced" , "seq" : 5 } )",
      R"([{"msg_id":"in array"}])",
      R"("msg_id")",
      R"(17)",
      R"({})",
      "",
      R"({"msg_id":"a")",
      R"({"msg_id":"a"} trailing)",
      R"({"msg_id":"a",})",
      R"({"seq":01})",
      R"({"seq":1e999})",
      "{\"msg_id\":\"bad\xC3\x28utf8\"}",
      "{\"msg_id\":\"ctl\x01\"}",
      R"({"msg_id":"\ud800"})",
  };
  for (const std::string& body : bodies) {
    AcceptedFields want = AcceptedFieldsOf(nlohmann::json::parse(body, nullptr, false));
    AcceptedFields got = ScanAcceptedFields(body);
    EXPECT_EQ(got.object, want.object) << body;
    EXPECT_EQ(got.msg_id, want.msg_id) << body;
    EXPECT_EQ(got.seq, want.seq) << body;
    EXPECT_EQ(got.ordering_key, want.ordering_key) << body;
  }
}

// Verifies the fields of a typical payload.
TEST(AcceptedFieldsTest, ReadsTopLevelMembers) {
  AcceptedFields f = ScanAcceptedFields(R"({"msg_id":"m1","seq":4,"ordering_key":7,"x":[1]})");
  EXPECT_TRUE(f.object);
  EXPECT_EQ(f.msg_id, "m1");
  EXPECT_EQ(f.seq, 4);
  EXPECT_EQ(f.ordering_key, "7");
  EXPECT_FALSE(ScanAcceptedFields("not json").object);
}

}  // namespace
}  // namespace egress::sim
