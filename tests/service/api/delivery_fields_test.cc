#include "dispatcher/service/api/delivery_fields.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/adapter_registry.h"
#include "adapters/json_reader.h"
#include "tests/support/text_mutator.h"

namespace egress::service {
namespace {

using nlohmann::json;
using Kind = RequestField::Kind;

// The test oracle: the fields of a request read through nlohmann's tree instead of the
// production reader, so the two can be held against each other. Test code only.

// Nesting depth of objects and arrays (recursive: the oracle only sees shallow texts).
size_t Depth(const json& j) {
  if (!j.is_structured()) {
    return 0;
  }
  size_t deepest = 0;
  for (const json& child : j) {
    deepest = std::max(deepest, Depth(child));
  }
  return deepest + 1;
}

// The field `name` of `body`; an object's text (its dump) only when `keep_object`.
RequestField FieldOf(const json& body, const char* name, bool keep_object = false) {
  RequestField f;
  auto it = body.find(name);
  if (it == body.end()) {
    return f;
  }
  if (it->is_null()) {
    f.kind = Kind::kNull;
  } else if (it->is_string()) {
    f.kind = Kind::kString;
    f.text = it->get<std::string>();
  } else if (it->is_number_integer()) {
    f.kind = Kind::kInteger;
    f.integer = it->get<int64_t>();
  } else if (it->is_object()) {
    f.kind = Kind::kObject;
    if (keep_object) {
      f.text = it->dump();
      f.depth = Depth(*it);
    }
  } else {
    f.kind = Kind::kOther;
  }
  return f;
}

DeliveryFields FieldsOf(const json& body) {
  DeliveryFields f;
  if (!body.is_object()) {
    f.is_object = false;
    return f;
  }
  f.tenant = FieldOf(body, "tenant");
  f.platform = FieldOf(body, "platform");
  f.destination = FieldOf(body, "destination");
  f.credential = FieldOf(body, "credential");
  f.payload = FieldOf(body, "payload", /*keep_object=*/true);
  f.idempotency_key = FieldOf(body, "idempotency_key");
  f.ordering_key = FieldOf(body, "ordering_key");
  f.cost = FieldOf(body, "cost");
  f.priority = FieldOf(body, "priority");
  return f;
}

const adapters::AdapterRegistry& Adapters() {
  static const adapters::AdapterRegistry* registry =
      new adapters::AdapterRegistry(adapters::PlatformEndpoints{});
  return *registry;
}

// Reads `text` both ways: straight from the text (ReadDeliveryFields) and through nlohmann's
// tree (FieldsOf). Wherever the reader takes the text, the tree must too, with the
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
  auto from_text = CheckDeliveryFields(std::move(fields), limits, Adapters());
  auto from_tree = CheckDeliveryFields(FieldsOf(tree), limits, Adapters());
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
  EXPECT_EQ(a.priority, b.priority) << text;
  // The payload keeps the client's spelling, less whitespace; its value is the same.
  EXPECT_EQ(json::parse(a.payload), json::parse(b.payload)) << text;
  EXPECT_EQ(adapters::CompactJson(a.payload), a.payload) << text;
  return Read::kDelivery;
}

// Verifies hand-picked requests give the same answer from the text as from nlohmann's tree:
// every field kind, repeated keys (the last counts), escapes, and every cost spelling.
TEST(DeliveryFieldsTest, TextAndTreeAgreeOnTable) {
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
TEST(DeliveryFieldsTest, TextAndTreeAgreeOnMutations) {
  const std::vector<std::string> seeds = {
      R"({"tenant":"acme","platform":"webhook","destination":"https://h.example/x",)"
      R"("credential":"c","payload":{"a":[1,2.5,"\u00e9"],"b":null},"idempotency_key":"k",)"
      R"("ordering_key":"o","cost":3,"priority":"bulk"})",
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
                                           "\"priority\":",
                                           "\"high\"",
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

// Verifies "priority": high, normal or bulk; absent or null is normal; anything else is a 400
// naming the field.
TEST(DeliveryFieldsTest, ReadsPriority) {
  const std::string base =
      R"({"tenant":"t","platform":"webhook","destination":"https://h.example/x",)"
      R"("credential":"c","payload":{"a":1})";
  const auto check = [&](const std::string& tail) {
    auto fields = ReadDeliveryBody(base + tail + "}");
    EXPECT_TRUE(fields.has_value()) << tail;
    return CheckDeliveryFields(std::move(*fields), IntakeLimits{}, Adapters());
  };
  EXPECT_EQ(check("")->priority, pacing::Priority::kNormal);
  EXPECT_EQ(check(R"(,"priority":null)")->priority, pacing::Priority::kNormal);
  EXPECT_EQ(check(R"(,"priority":"high")")->priority, pacing::Priority::kHigh);
  EXPECT_EQ(check(R"(,"priority":"normal")")->priority, pacing::Priority::kNormal);
  EXPECT_EQ(check(R"(,"priority":"bulk")")->priority, pacing::Priority::kBulk);
  for (const std::string bad : {R"(,"priority":"HIGH")", R"(,"priority":1)", R"(,"priority":"")",
                                R"(,"priority":{"x":1})", R"(,"priority":"urgent")"}) {
    auto refused = check(bad);
    ASSERT_FALSE(refused.has_value()) << bad;
    EXPECT_EQ(refused.error().http_status, 400) << bad;
    EXPECT_EQ(refused.error().field, "priority") << bad;
  }
}

// Verifies the body of POST /v1/deliveries is read by the one reader: a byte order mark is
// skipped, malformed text (a raw NUL byte included) is a 400 malformed_json, and JSON of another
// kind comes back as "not an object" for the checks to refuse.
TEST(DeliveryFieldsTest, ReadsDeliveryBody) {
  const std::string body =
      R"({"tenant":"t","platform":"webhook","destination":"https://h.example/x",)"
      R"("credential":"c","payload":{"a":1}})";
  auto plain = ReadDeliveryBody(body);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->tenant.text, "t");
  EXPECT_EQ(plain->payload.text, R"({"a":1})");
  EXPECT_TRUE(ReadDeliveryBody("\xEF\xBB\xBF" + body).has_value());
  for (const std::string& bad : {std::string("{"), std::string("\xEF\xBB{}"), body + "x",
                                 body + std::string(1, '\0'), std::string("")}) {
    auto read = ReadDeliveryBody(bad);
    ASSERT_FALSE(read.has_value()) << bad;
    EXPECT_EQ(read.error().http_status, 400);
    EXPECT_EQ(read.error().code, "malformed_json");
  }
  auto array = ReadDeliveryBody("[1]");
  ASSERT_TRUE(array.has_value());
  EXPECT_FALSE(array->is_object);
}

// Verifies a batch body: its items in order; each misshapen body with its own error; a repeated
// "deliveries" key takes the last; over the cap is 413 however long the body is.
TEST(DeliveryFieldsTest, ReadsBatchBody) {
  const std::string item = R"({"tenant":"t","platform":"slack"})";
  auto two = ReadBatchBody(R"({"x":[1],"deliveries":[)" + item + ",7]}", 10);
  ASSERT_TRUE(two.has_value());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].platform.text, "slack");
  EXPECT_FALSE((*two)[1].is_object);

  struct Case {
    std::string body;
    int status;
    std::string code;
  };
  const std::vector<Case> cases = {
      {"", 400, "malformed_json"},
      {"{\"deliveries\":[", 400, "malformed_json"},
      {"{\"deliveries\":[" + item + "]} x", 400, "malformed_json"},
      {"[" + item + "]", 400, "invalid_request"},
      {"{}", 400, "invalid_request"},
      {R"({"deliveries":{}})", 400, "invalid_request"},
      {R"({"deliveries":[1],"deliveries":"no"})", 400, "invalid_request"},
      {R"({"deliveries":[]})", 413, "batch_too_large"},
      {R"({"deliveries":[1,2,3,4]})", 413, "batch_too_large"},
      // Over the cap and malformed after it: the text is still checked to its end.
      {R"({"deliveries":[1,2,3,4,}])", 400, "malformed_json"},
  };
  for (const Case& c : cases) {
    auto read = ReadBatchBody(c.body, 3);
    ASSERT_FALSE(read.has_value()) << c.body;
    EXPECT_EQ(read.error().http_status, c.status) << c.body;
    EXPECT_EQ(read.error().code, c.code) << c.body;
  }
  auto last = ReadBatchBody(R"({"deliveries":"no","deliveries":[1,2]})", 3);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->size(), 2u);
  auto bom = ReadBatchBody("\xEF\xBB\xBF{\"deliveries\":[1]}", 3);
  ASSERT_TRUE(bom.has_value());

  // 100,000 items against a cap of 1,000: refused, and never more than the cap held.
  std::string big = R"({"deliveries":[)";
  for (int i = 0; i < 100'000; ++i) {
    big += i > 0 ? "," + item : item;
  }
  big += "]}";
  auto over = ReadBatchBody(big, 1000);
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().http_status, 413);
}

// Verifies each platform's adapter decides the destination's shape at intake, with its message.
TEST(DeliveryFieldsTest, DestinationShapeIsThePlatformsAdapters) {
  struct Case {
    std::string platform, destination;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"slack", "C0123456789", true},
      {"slack", "https://hooks.slack.com/services/T/B/x", true},
      {"slack", "http://hooks.slack.com/services/T/B/x", false},
      {"slack", "not a channel", false},
      {"discord", "channels/123", true},
      {"discord", "webhooks/123/tok-en", true},
      {"discord", "webhooks/123/", false},
      {"discord", "channels/abc", false},
      {"line", "U0123456789abcdef0123456789abcdef", true},
      {"line", "X0123456789abcdef0123456789abcdef", false},
      {"webhook", "https://h.example/x", true},
      {"webhook", "ftp://h.example/x", false},
      {"webhook", "https://h.example/a b", false},
      // Issue #37: bytes outside RFC 3986 are refused, so nothing can end a URL before its
      // secrets; a single quote is a sub-delimiter and stays.
      {"webhook", "https://h.example/x'?token=s", true},
      {"webhook", "https://h.example/x\"?token=s", false},
      {"webhook", "https://u<ser:pw@h.example/", false},
      {"webhook", "https://h.example/x`#s", false},
      {"slack", "https://hooks.slack.com/services/T/B/x>y", false},
      {"discord", "webhooks/123/tok'en", false},
      {"discord", "webhooks/123/tok/en", false},
  };
  for (const Case& c : cases) {
    DeliveryFields f;
    f.tenant = {.kind = Kind::kString, .text = "t"};
    f.platform = {.kind = Kind::kString, .text = c.platform};
    f.destination = {.kind = Kind::kString, .text = c.destination};
    f.credential = {.kind = Kind::kString, .text = "c"};
    f.payload = {.kind = Kind::kObject, .text = "{}"};
    auto checked = CheckDeliveryFields(std::move(f), IntakeLimits{}, Adapters());
    EXPECT_EQ(checked.has_value(), c.ok) << c.platform << " " << c.destination;
    if (!checked) {
      EXPECT_EQ(checked.error().http_status, 422);
      EXPECT_EQ(checked.error().code, "invalid_destination");
      EXPECT_EQ(checked.error().field, "destination");
      EXPECT_TRUE(checked.error().message.starts_with("destination: must be"))
          << checked.error().message;
    }
  }
}

// A payload `depth` levels deep: {"a":[[...[1]...]]}.
std::string NestedPayload(size_t depth) {
  std::string open = "{\"a\":", close = "}";
  for (size_t i = 1; i < depth; ++i) {
    open += '[';
    close.insert(close.begin(), ']');
  }
  return open + "1" + close;
}

// Verifies intake bounds a payload's nesting: max_json_depth levels pass, one more is a 400
// naming payload, and a 100,000-deep payload (200 kB) is read without recursion and refused.
TEST(DeliveryFieldsTest, BoundsPayloadDepth) {
  IntakeLimits limits;
  limits.max_json_depth = 64;
  auto check = [&](size_t depth) {
    const std::string body =
        R"({"tenant":"t","platform":"webhook","destination":"https://h.example/x",)"
        R"("credential":"c","payload":)" +
        NestedPayload(depth) + "}";
    auto fields = ReadDeliveryBody(body);
    EXPECT_TRUE(fields.has_value()) << depth;
    EXPECT_EQ(fields->payload.depth, depth);
    return CheckDeliveryFields(std::move(*fields), limits, Adapters());
  };
  EXPECT_TRUE(check(1).has_value());
  EXPECT_TRUE(check(64).has_value());
  for (size_t depth : {65, 100'000}) {
    auto refused = check(depth);
    ASSERT_FALSE(refused.has_value()) << depth;
    EXPECT_EQ(refused.error().http_status, 400);
    EXPECT_EQ(refused.error().field, "payload");
    EXPECT_NE(refused.error().message.find("at most 64 levels"), std::string::npos)
        << refused.error().message;
  }
}

}  // namespace
}  // namespace egress::service
