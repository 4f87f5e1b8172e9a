#include "dispatcher/service/pause_book.h"

#include <string>

#include <gtest/gtest.h>

#include "dispatcher/base/redact.h"

namespace egress::service {
namespace {

using nlohmann::json;

Pause Made(const json& body, const std::string& id, int64_t created_ms = 1) {
  auto pause = PauseFromRequest(body, 256);
  EXPECT_TRUE(pause.has_value()) << body.dump();
  pause->id = id;
  pause->created_ms = created_ms;
  return *pause;
}

// Verifies what a pause request may hold: strings within bounds, a known platform, no unknown
// field, at least one scope field; and that a destination is kept as shown, never raw.
TEST(PauseBookTest, RequestsAreCheckedAndDestinationsKeptAsShown) {
  struct Case {
    json body;
    std::string field;  // of the 400; empty: accepted
  };
  const Case cases[] = {
      {{{"tenant", "acme"}}, ""},
      {{{"platform", "discord"}, {"reason", "outage"}}, ""},
      {{{"reason", "no scope"}}, "body"},
      {json::object(), "body"},
      {json::array(), "body"},
      {"text", "body"},
      {{{"tenant", 7}}, "tenant"},
      {{{"tenant", "ac\nme"}}, "tenant"},
      {{{"tenant", std::string(300, 'a')}}, "tenant"},
      {{{"platform", "sms"}}, "platform"},
      {{{"tenant", "acme"}, {"platfrom", "slack"}}, "platfrom"},
      {{{"tenant", "acme"}, {std::string(100, 'x'), "y"}}, "body"},
      {{{"tenant", "acme"}, {"reason", std::string(kMaxPauseReasonBytes + 1, 'r')}}, "reason"},
      {{{"destination", nullptr}}, "destination"},
  };
  for (const Case& c : cases) {
    auto pause = PauseFromRequest(c.body, 256);
    if (c.field.empty()) {
      EXPECT_TRUE(pause.has_value()) << c.body.dump() << " " << pause.error().message;
      continue;
    }
    ASSERT_FALSE(pause.has_value()) << c.body.dump();
    EXPECT_EQ(pause.error().http_status, 400);
    EXPECT_EQ(pause.error().field, c.field) << c.body.dump() << " " << pause.error().message;
  }
  const std::string secret_url = "https://hooks.example/in/abc?token=s3cr3t";
  auto pause = PauseFromRequest({{"destination", secret_url}}, 256);
  ASSERT_TRUE(pause.has_value());
  EXPECT_EQ(pause->destination.find("s3cr3t"), std::string::npos) << pause->destination;
  EXPECT_EQ(pause->destination, RedactDestination(secret_url));
  // The shown form given back names the same destinations.
  auto again = PauseFromRequest({{"destination", pause->destination}}, 256);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->destination, pause->destination);
  EXPECT_EQ(PauseToJson(*pause).dump().find("s3cr3t"), std::string::npos);
}

// Verifies the stored form: what PauseToJson writes reads back the same; a record under another
// key, with a bad id or fields, or not JSON is Corruption naming the key, never the text.
TEST(PauseBookTest, StoredPausesReadBackAndBadOnesAreRefused) {
  const Pause p = Made({{"tenant", "acme"}, {"platform", "discord"}, {"reason", "leaked token"}},
                       "pause_0123456789abcdef", 1'796'500'000'000);
  const std::string text = PauseToJson(p).dump();
  auto back = PauseFromSetting(PauseKey(p.id), text);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_TRUE(back->SameScope(p));
  EXPECT_EQ(back->reason, "leaked token");
  EXPECT_EQ(back->created_ms, p.created_ms);
  EXPECT_EQ(back->id, p.id);
  json j = PauseToJson(p);
  EXPECT_EQ(j["created"], "2026-12-05T19:46:40Z");
  EXPECT_FALSE(j.contains("credential"));  // unset fields are left out
  const std::pair<std::string, std::string> bad[] = {
      {PauseKey("pause_ffffffffffffffff"), text},  // another id's key
      {PauseKey(p.id), "{not json"},
      {PauseKey(p.id), R"({"id":"pause_0123456789abcdef","created_ms":1})"},  // no scope
      {PauseKey("pause_0123"), R"({"id":"pause_0123","tenant":"a","created_ms":1})"},
      {PauseKey(p.id), R"({"id":"pause_0123456789abcdef","tenant":"a","created_ms":"1"})"},
      {PauseKey(p.id),
       "{\"id\":\"pause_0123456789abcdef\",\"tenant\":\"se\\u0001cret\","
       "\"created_ms\":1}"},
  };
  for (const auto& [key, value] : bad) {
    auto refused = PauseFromSetting(key, value);
    ASSERT_FALSE(refused.has_value()) << value;
    EXPECT_EQ(refused.error().code(), Status::Code::kCorruption);
    EXPECT_NE(refused.error().message().find(key), std::string::npos);
    EXPECT_EQ(refused.error().message().find("secret"), std::string::npos);
  }
  EXPECT_TRUE(IsPauseId("pause_0123456789abcdef"));
  EXPECT_FALSE(IsPauseId("pause_0123456789ABCDEF"));
  EXPECT_FALSE(IsPauseId("pause_0123456789abcde"));
  EXPECT_FALSE(IsPauseId("../pause_0123456789abc"));
}

// Verifies matching: a field left out matches anything; every set field must match; the first
// pause by id wins; a destination given with a secret names that one destination only (by its
// digest: two Slack incoming webhooks show alike), one given in its shown form every destination
// shown alike.
TEST(PauseBookTest, MatchesEverySetFieldAndSecretDestinationsExactly) {
  PauseBook book;
  book.Put(Made({{"tenant", "acme"}, {"platform", "discord"}}, "pause_b"));
  book.Put(Made({{"credential", "bot"}, {"destination", "C1"}}, "pause_c"));
  const Pause* hit = book.Match("acme", "discord", "any", "X");
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->id, "pause_b");
  EXPECT_EQ(book.Match("globex", "discord", "other", "C1"), nullptr);
  hit = book.Match("globex", "slack", "bot", "C1");
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->id, "pause_c");
  EXPECT_EQ(book.Match("globex", "slack", "bot", "C2"), nullptr);

  const std::string one = "https://hooks.slack.com/services/T000/B000/one-secret-token";
  const std::string two = "https://hooks.slack.com/services/T000/B000/two-secret-token";
  ASSERT_EQ(RedactDestination(one), RedactDestination(two));
  const Pause exact = Made({{"destination", one}}, "pause_d");
  EXPECT_EQ(exact.destination, RedactDestination(one));
  EXPECT_EQ(exact.destination_sha256.size(), 64u);
  EXPECT_EQ(PauseToJson(exact).dump().find("one-secret"), std::string::npos);
  book.Put(exact);
  hit = book.Match("acme", "slack", "hook", one);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->id, "pause_d");
  EXPECT_EQ(book.Match("acme", "slack", "hook", two), nullptr);
  // Stored and read back, it still names that one only.
  auto back = PauseFromSetting(PauseKey("pause_0123456789abcdef"), [&] {
    Pause p = exact;
    p.id = "pause_0123456789abcdef";
    return PauseToJson(p).dump();
  }());
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->destination_sha256, exact.destination_sha256);
  // The shown form pasted back: every destination shown alike.
  book.Put(Made({{"destination", exact.destination}}, "pause_e"));
  hit = book.Match("acme", "slack", "hook", two);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->id, "pause_e");
  EXPECT_FALSE(exact.SameScope(*book.Find("pause_e")));

  // The same scope is found whatever the reason; an id is replaced in place.
  EXPECT_NE(book.FindScope(
                Made({{"platform", "discord"}, {"tenant", "acme"}, {"reason", "x"}}, "pause_z")),
            nullptr);
  book.Put(Made({{"tenant", "globex"}}, "pause_b"));
  EXPECT_EQ(book.size(), 4u);
  EXPECT_EQ(book.Match("acme", "discord", "any", "X"), nullptr);
  EXPECT_TRUE(book.Remove("pause_b"));
  EXPECT_FALSE(book.Remove("pause_b"));
  EXPECT_EQ(book.size(), 3u);
}

// Verifies that the book holds every stored pause, past the API's limit too (two nodes may each
// make the last one: none may fall out of force or out of reach), in creation order; and Same.
TEST(PauseBookTest, HoldsEveryStoredPauseAndListsInCreationOrder) {
  PauseBook book;
  std::vector<Pause> all;
  for (size_t i = 0; i < PauseBook::kMaxPauses + 1; ++i) {
    all.push_back(Made({{"tenant", "t" + std::to_string(i)}}, "pause_" + std::to_string(1000 + i),
                       static_cast<int64_t>(PauseBook::kMaxPauses - i)));
  }
  book.ReplaceAll(all);
  EXPECT_TRUE(book.Same(all));
  EXPECT_EQ(book.size(), PauseBook::kMaxPauses + 1);
  ASSERT_NE(book.Find("pause_" + std::to_string(1000 + PauseBook::kMaxPauses)), nullptr);
  book.Put(Made({{"tenant", "replaced"}}, "pause_1000", 5000));  // not a new one
  EXPECT_EQ(book.size(), PauseBook::kMaxPauses + 1);
  EXPECT_FALSE(book.Same(all));
  const std::vector<Pause> ordered = book.InCreationOrder();
  EXPECT_EQ(ordered.front().id, "pause_" + std::to_string(1000 + PauseBook::kMaxPauses));
  EXPECT_EQ(ordered.back().id, "pause_1000");
}

}  // namespace
}  // namespace egress::service
