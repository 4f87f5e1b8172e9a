#include "storage/delivery_json.h"

#include <string>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>

namespace egress::storage {
namespace {

using nlohmann::json;

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

Delivery Sample() {
  Delivery d;
  d.id = "01KAAAAAAAAAAAAAAAAAAAAAAA";
  d.tenant = "acme";
  d.platform = "slack";
  d.destination = "C1";
  d.credential = "bot";
  d.payload = R"({"text":"hi \u00e9","blocks":[1,2.5,null]})";
  d.idempotency_key = "k1";
  d.cost = 2;
  d.created_ms = 1000;
  d.state = DeliveryState::kDeferred;
  d.attempts = 1;
  d.next_attempt_ms = 5000;
  d.reason = "retry_after";
  d.updated_ms = 2000;
  d.history.push_back({.at_ms = 1500,
                       .duration_ms = 40,
                       .http_status = 429,
                       .platform_error = "rate_limited",
                       .detail = "slow down",
                       .rate_limit_headers = {{"retry-after", "3"}}});
  return d;
}

// `j` dumped with nlohmann's default error handler, which throws on invalid UTF-8.
std::string Dumped(const json& j) { return j.dump(); }

// Verifies the exact text of the view, with and without the payload, as the API answers it.
TEST(DeliveryJsonTest, ViewIsTheApiShape) {
  EXPECT_EQ(Dumped(DeliveryToJson(Sample(), false)),
            R"({"attempts":1,"attempts_history":[{"at_ms":1500,"detail":"slow down",)"
            R"("duration_ms":40,"http_status":429,"platform_error":"rate_limited",)"
            R"("rate_limit_headers":{"retry-after":"3"}}],"cost":2,"created_ms":1000,)"
            R"("credential":"bot","destination":"C1","id":"01KAAAAAAAAAAAAAAAAAAAAAAA",)"
            R"("idempotency_key":"k1","next_attempt_ms":5000,"platform":"slack",)"
            R"("priority":"normal","reason":"retry_after","state":"deferred","tenant":"acme",)"
            R"("updated_ms":2000})");
  const json full = DeliveryToJson(Sample(), true);
  EXPECT_EQ(full["payload"], json::parse(Sample().payload));
  Delivery done = Sample();
  done.state = DeliveryState::kDelivered;
  done.finished_ms = 3000;
  done.reason.clear();
  done.idempotency_key.clear();
  done.ordering_key = "o";
  done.priority = pacing::Priority::kBulk;
  const json view = DeliveryToJson(done, false);
  EXPECT_FALSE(view.contains("next_attempt_ms"));
  EXPECT_FALSE(view.contains("reason"));
  EXPECT_FALSE(view.contains("idempotency_key"));
  EXPECT_EQ(view["finished_ms"], 3000);
  EXPECT_EQ(view["ordering_key"], "o");
  EXPECT_EQ(view["priority"], "bulk");
}

// Verifies that a record with invalid UTF-8 and control characters in its strings gives a view
// that serialises without throwing: bad bytes read as U+FFFD, control characters are escaped.
TEST(DeliveryJsonTest, HostileStringsStillSerialise) {
  Delivery d = Sample();
  d.tenant = "ac\xFFme";
  d.reason = std::string("a\x01\x00z", 4);
  d.history[0].detail = "cut \xE2\x82";
  d.history[0].rate_limit_headers = {{"x-\xC0", "\x80"}};
  d.payload = "not json \xF5";
  std::string text;
  ASSERT_NO_THROW(text = Dumped(DeliveryToJson(d, true)));
  const json back = json::parse(text);
  EXPECT_EQ(back["tenant"], "ac" + std::string(kReplacement) + "me");
  // The reason passes the redaction layer: control bytes show as \xNN.
  EXPECT_EQ(back["reason"], "a\\x01\\x00z");
  EXPECT_EQ(back["attempts_history"][0]["detail"], "cut " + std::string(kReplacement));
  EXPECT_EQ(back["attempts_history"][0]["rate_limit_headers"]["x-" + std::string(kReplacement)],
            std::string(kReplacement));
  EXPECT_EQ(back["payload"], "not json " + std::string(kReplacement));
}

// Verifies the repair rule: each maximal ill-formed subpart (Unicode 3.9) is one U+FFFD, and
// well-formed text, 4-byte sequences included, is kept as it is.
TEST(DeliveryJsonTest, RepairsEachIllFormedSubpart) {
  const std::string r(kReplacement);
  const std::pair<std::string, std::string> cases[] = {
      {"\xF0\x9F\x98\x80 \xC3\xA9", "\xF0\x9F\x98\x80 \xC3\xA9"},  // valid stays
      {"\xC0\xAF", r + r},                                         // overlong lead bytes
      {"\xED\xA0\x80", r + r + r},                                 // a surrogate
      {"\xF0\x9F\x98", r},                                         // truncated at the end
      {"\xF0\x9F\x98x", r + "x"},                                  // truncated mid-text
      {"\xF4\x90\x80\x80", r + r + r + r},                         // past U+10FFFF
  };
  for (const auto& [in, want] : cases) {
    Delivery d = Sample();
    d.destination = in;
    EXPECT_EQ(DeliveryToJson(d, false)["destination"], want);
  }
}

// Verifies that a payload nested deeper than the bound is shown as its text, and one at the
// bound as JSON, so that serialising a hostile record cannot exhaust the stack.
TEST(DeliveryJsonTest, DeepPayloadIsShownAsText) {
  Delivery d = Sample();
  const auto nested = [](int depth) {
    return std::string(depth, '[') + "\"[\"" + std::string(depth, ']');
  };
  d.payload = nested(kMaxPayloadViewDepth);
  EXPECT_TRUE(DeliveryToJson(d, true)["payload"].is_array());
  d.payload = nested(200'000);
  const json view = DeliveryToJson(d, true);
  ASSERT_TRUE(view["payload"].is_string());
  EXPECT_EQ(view["payload"], d.payload);
  EXPECT_NO_THROW(Dumped(view));
}

}  // namespace
}  // namespace egress::storage
