#include "dispatcher/service/api/delivery_request.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/json_reader.h"
#include "tests/support/text_mutator.h"

namespace egress::service {
namespace {

using nlohmann::json;

// Reads `text` both ways: straight from the text (ReadDeliveryFields) and through nlohmann's
// tree (ParseDeliveryRequest). Wherever the reader takes the text, the tree must too, with the
// same answer: the same error, or the same delivery with an equal payload.
enum class Read { kRefused, kError, kDelivery };  // by the reader; an error; a delivery
Read ExpectSameAnswer(const std::string& text) {
  const IntakeLimits limits;
  adapters::JsonReader reader(text);
  DeliveryFields fields;
  const bool read = ReadDeliveryFields(reader, fields) && reader.AtEnd();
  const json tree = json::parse(text, nullptr, false);
  if (!read) {
    // The reader refuses nothing nlohmann takes but a raw NUL (nlohmann stops there).
    EXPECT_TRUE(tree.is_discarded() || text.find('\0') != std::string::npos) << text;
    return Read::kRefused;
  }
  EXPECT_FALSE(tree.is_discarded()) << text;
  if (tree.is_discarded()) {
    return Read::kError;
  }
  auto from_text = CheckDeliveryFields(std::move(fields), limits);
  auto from_tree = ParseDeliveryRequest(tree, limits);
  EXPECT_EQ(from_text.has_value(), from_tree.has_value()) << text;
  if (!from_text || !from_tree) {
    if (!from_text && !from_tree) {
      EXPECT_EQ(from_text.error().http_status, from_tree.error().http_status) << text;
      EXPECT_EQ(from_text.error().code, from_tree.error().code) << text;
      EXPECT_EQ(from_text.error().message, from_tree.error().message) << text;
      EXPECT_EQ(from_text.error().field, from_tree.error().field) << text;
    }
    return Read::kError;
  }
  const storage::NewDelivery& a = *from_text;
  const storage::NewDelivery& b = *from_tree;
  EXPECT_EQ(a.tenant, b.tenant) << text;
  EXPECT_EQ(a.platform, b.platform) << text;
  EXPECT_EQ(a.destination, b.destination) << text;
  EXPECT_EQ(a.credential, b.credential) << text;
  EXPECT_EQ(a.idempotency_key, b.idempotency_key) << text;
  EXPECT_EQ(a.ordering_key, b.ordering_key) << text;
  EXPECT_EQ(a.cost, b.cost) << text;
  // The payload keeps the client's spelling, less whitespace; its value is the same.
  EXPECT_EQ(json::parse(a.payload), json::parse(b.payload)) << text;
  EXPECT_EQ(adapters::CompactJson(a.payload), a.payload) << text;
  return Read::kDelivery;
}

// Verifies hand-picked requests give the same answer from the text as from nlohmann's tree:
// every field kind, repeated keys (the last counts), escapes, and every cost spelling.
TEST(DeliveryRequestTest, TextAndTreeAgreeOnTable) {
  const std::string base =
      R"("platform":"webhook","destination":"https://h.example/x","credential":"c")";
  const std::vector<std::string> texts = {
      R"({"tenant":"acme",)" + base + R"(,"payload":{"b":[1,2.5,"\u00e9"],"a":null}})",
      R"({ "tenant" : "acme" , )" + base + R"( , "payload" : { "b" : [ 1 , "x y" ] } })",
      R"({"tenant":"\u0061cme",)" + base + R"(,"payload":{},"idempotency_key":"k\n"})",
      R"({"\u0074enant":"acme",)" + base + R"(,"payload":{}})",
      R"({"tenant":"a","tenant":"b",)" + base + R"(,"payload":{"x":1},"payload":{"y":2}})",
      R"({"tenant":1,"tenant":"b",)" + base + R"(,"payload":{}})",
      R"({"tenant":"b","tenant":1,)" + base + R"(,"payload":{}})",
      R"({"tenant":null,)" + base + R"(,"payload":{}})",
      R"({"tenant":"",)" + base + R"(,"payload":{}})",
      R"({)" + base + R"(,"payload":{}})",
      R"({"tenant":"acme",)" + base + R"(,"payload":[]})",
      R"({"tenant":"acme",)" + base + R"(,"payload":"{}"})",
      R"({"tenant":"acme",)" + base + R"(,"payload":null})",
      R"({"tenant":"acme",)" + base + R"(,"payload":{},"ordering_key":null})",
      R"({"tenant":"acme",)" + base + R"(,"payload":{},"ordering_key":7})",
      R"({"tenant":"acme",)" + base + R"(,"payload":{},"extra":{"deep":[[{}]]}})",
      R"({"tenant":"acme","platform":"myspace","destination":"x","credential":"c","payload":{}})",
      R"({"tenant":"acme","platform":"slack","destination":"not a channel","credential":"c","payload":{}})",
      R"({"tenant":"acme","platform":"line","destination":"U0123456789abcdef0123456789abcdef","credential":"c","payload":{"to":["U1"]}})",
      "[1]",
      "\"tenant\"",
      "null",
      "{}",
  };
  for (const std::string& text : texts) {
    EXPECT_NE(ExpectSameAnswer(text), Read::kRefused) << text;
  }
  for (const std::string cost : {"1",
                                 "3",
                                 "1000000",
                                 "1000001",
                                 "0",
                                 "-0",
                                 "-1",
                                 "1.0",
                                 "1e2",
                                 "2.5",
                                 "\"5\"",
                                 "true",
                                 "null",
                                 "[1]",
                                 "{}",
                                 "9223372036854775807",
                                 "9223372036854775808",
                                 "18446744073709551615",
                                 "18446744073709551616",
                                 "99999999999999999999999"}) {
    const std::string text =
        R"({"tenant":"acme",)" + base + R"(,"payload":{},"cost":)" + std::string(cost) + "}";
    EXPECT_NE(ExpectSameAnswer(text), Read::kRefused) << text;
  }
}

// Verifies the same answers on many mutations of valid requests (bytes inserted, deleted and
// replaced from an alphabet of JSON pieces and field names).
TEST(DeliveryRequestTest, TextAndTreeAgreeOnMutations) {
  const std::vector<std::string> seeds = {
      R"({"tenant":"acme","platform":"webhook","destination":"https://h.example/x",)"
      R"("credential":"c","payload":{"a":[1,2.5,"\u00e9"],"b":null},"idempotency_key":"k",)"
      R"("ordering_key":"o","cost":3})",
      R"({"tenant":"t","platform":"line","destination":"U0123456789abcdef0123456789abcdef",)"
      R"("credential":"l","payload":{"to":["U1","U2"],"messages":[{"type":"text"}]}})",
      R"({"payload":{"text":"hi \ud83d\ude00"},"credential":"s","destination":"C0123",)"
      R"("platform":"slack","tenant":"x"})",
  };
  const std::vector<std::string> pieces = {"{",
                                           "}",
                                           "[",
                                           "]",
                                           ",",
                                           ":",
                                           "\"",
                                           "\\",
                                           " ",
                                           "\n",
                                           "null",
                                           "true",
                                           "1",
                                           "-0",
                                           "1.0",
                                           "1e2",
                                           "0",
                                           "\"x\"",
                                           "{}",
                                           "[]",
                                           "\"tenant\":",
                                           "\"cost\":",
                                           "\"payload\":",
                                           "\\u0074",
                                           "\"line\"",
                                           "\"slack\"",
                                           "99999999999999999999",
                                           "\xC3\xA9",
                                           "\x80"};
  TextMutator mutator;
  int read = 0, delivered = 0;
  for (int round = 0; round < 20000; ++round) {
    const std::string text = mutator.Mutate(seeds, pieces);
    const Read r = ExpectSameAnswer(text);
    read += r != Read::kRefused ? 1 : 0;
    delivered += r == Read::kDelivery ? 1 : 0;
    if (::testing::Test::HasFailure()) {
      break;
    }
  }
  // The mutations do not only produce garbage.
  EXPECT_GT(read, 1000);
  EXPECT_GT(delivered, 300);
}

}  // namespace
}  // namespace egress::service
