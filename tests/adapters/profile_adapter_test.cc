#include "adapters/profile_adapter.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/rate_limit_headers.h"
#include "dispatcher/pacing/classify.h"
#include "tests/adapters/adapter_fixtures.h"

namespace egress::adapters {
namespace {

using nlohmann::json;
using pacing::Classify;
using pacing::OutcomeClass;
using std::chrono::seconds;

constexpr char kTelegram429[] =
    R"({"ok":false,"error_code":429,"description":"Too Many Requests: retry after 35",)"
    R"("parameters":{"retry_after":35}})";

ProfileTemplate Template(std::string_view text) {
  Result<ProfileTemplate> parsed = ProfileTemplate::Parse(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.has_value() ? std::move(*parsed) : ProfileTemplate();
}

Platform TestPlatform(std::string_view name) {
  Result<Platform> platform = RegisterPlatform(name);
  EXPECT_TRUE(platform.has_value()) << name;
  return platform.value_or(Platform::kWebhook);
}

ProfileRule Rule(std::vector<int> statuses, std::string body_contains, ProfileAction action,
                 std::string reason) {
  return ProfileRule{.statuses = std::move(statuses),
                     .body_contains = std::move(body_contains),
                     .action = action,
                     .reason = std::move(reason)};
}

// The shipped Telegram profile (config/profiles/telegram.toml), written by hand.
ProfileSpec TelegramSpec() {
  ProfileSpec spec;
  spec.platform = TestPlatform("test_telegram");
  spec.base_url = "https://tg.test";
  spec.url = Template("{base_url}/bot{credential.token}/sendMessage");
  spec.body_fields = {{"chat_id", Template("{destination}")}};
  spec.destination_chars = "0-9A-Za-z_@-";
  spec.destination_max_bytes = 64;
  spec.success_statuses = {200};
  spec.success_pointer = "/ok";
  spec.ref_pointer = "/result/message_id";
  spec.error_pointer = "/description";
  spec.retry_after_pointer = "/parameters/retry_after";
  spec.rules = {
      Rule({403}, "", ProfileAction::kDead, "bot_blocked"),
      Rule({400}, "chat not found", ProfileAction::kDead, "chat_not_found"),
      Rule({401}, "", ProfileAction::kDisableCredential, "invalid_token"),
  };
  return spec;
}

// A made-up API that uses the rest of ProfileSpec: PUT, the delivery id in the path, an auth
// header and a header from the credential, its own rate-limit headers, a wait header in
// milliseconds, and rules for every action.
ProfileSpec AcmeSpec(ResetUnit reset_unit = ResetUnit::kSeconds) {
  ProfileSpec spec;
  spec.platform = TestPlatform("test_acme");
  spec.base_url = "https://acme.test/api";
  spec.method = "PUT";
  spec.url = Template("{base_url}/v2/rooms/{destination}/messages/{delivery_id}");
  spec.headers = {{"X-Client", Template("{credential.client_id}")}, {"X-Static", Template("yes")}};
  spec.auth_header = "Authorization";
  spec.auth_value = Template("Token {credential.token}");
  spec.success_statuses = {200, 201};
  spec.ref_pointer = "/data/0/id";
  spec.error_pointer = "/error/message";
  spec.limit_header = "X-Acme-Limit";
  spec.remaining_header = "X-Acme-Remaining";
  spec.reset_header = "X-Acme-Reset";
  spec.reset_unit = reset_unit;
  spec.retry_after_header = "X-Acme-Wait";
  spec.retry_after_unit = ResetUnit::kMilliseconds;
  spec.rules = {
      Rule({409}, "duplicate", ProfileAction::kDelivered, ""),
      Rule({400, 422}, "room_archived", ProfileAction::kDisableDestination, "room_archived"),
      Rule({400}, "bad_key", ProfileAction::kDisableCredential, "bad_key"),
      Rule({400}, "", ProfileAction::kDead, "bad_request"),
      Rule({}, "slow_down", ProfileAction::kThrottle, "slow_down"),
      Rule({412}, "", ProfileAction::kRetry, "precondition_failed"),
  };
  return spec;
}

// No rules and nothing but a URL: the default classification alone.
ProfileSpec BareSpec() {
  ProfileSpec spec;
  spec.platform = TestPlatform("test_acme");
  spec.base_url = "https://bare.test";
  spec.url = Template("{base_url}/send");
  return spec;
}

// The Teams profile's shape: an OAuth2 access token in a Bearer header.
ProfileSpec TeamsLikeSpec() {
  ProfileSpec spec = BareSpec();
  spec.auth_header = "Authorization";
  spec.auth_value = Template("Bearer {access_token}");
  spec.oauth2 = adapters::OAuth2Spec{.token_url = "https://login.test/token", .scope = "s"};
  return spec;
}

Credential FullCredential() {
  Credential c = TokenCredential("tok-1");
  c.client_id = "app-1";
  c.access_token = "access-1";
  return c;
}

storage::Delivery Message(std::string destination, std::string payload) {
  return MakeDelivery("test", std::move(destination), std::move(payload));
}

AttemptReport Interpret(const ProfileSpec& spec, const Result<HttpResponse>& response) {
  return ProfileAdapter(spec).Interpret(Message("chat-1", "{}"), response, kTestNow);
}

// Verifies the Telegram-like request: the token in the URL (a secret URL, shown by origin
// only), chat_id merged into the payload from the destination, the JSON content type.
TEST(ProfileAdapterTest, BuildsTelegramRequest) {
  ProfileAdapter adapter(TelegramSpec());
  Result<HttpRequest> r =
      adapter.BuildRequest(Message("-1001234", R"({"text":"hi","parse_mode":"HTML"})"),
                           TokenCredential("123:ABC"), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->method, "POST");
  EXPECT_EQ(r->url, "https://tg.test/bot123:ABC/sendMessage");
  EXPECT_TRUE(r->secret_url);
  EXPECT_EQ(ShownUrl(*r), "https://tg.test/(redacted)");
  EXPECT_EQ(HeaderOf(*r, "Content-Type"), "application/json");
  EXPECT_EQ(HeaderOf(*r, "Authorization"), "<absent>");
  EXPECT_EQ(HeaderOf(*r, "traceparent"), "<absent>");
  const json body = json::parse(r->body);
  EXPECT_EQ(body, json::parse(R"({"text":"hi","parse_mode":"HTML","chat_id":"-1001234"})"));
}

// Verifies a body field replaces the payload's own field of that name: the destination decides
// where the message goes, not the payload.
TEST(ProfileAdapterTest, BodyFieldsOverrideThePayload) {
  ProfileAdapter adapter(TelegramSpec());
  Result<HttpRequest> r = adapter.BuildRequest(Message("42", R"({"chat_id":"666","text":"x"})"),
                                               TokenCredential("t"), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const json body = json::parse(r->body);
  EXPECT_EQ(body["chat_id"], "42");
  EXPECT_EQ(body["text"], "x");
}

// Verifies what cannot be sent: a payload that is not a JSON object when body fields are to be
// merged (InvalidArgument), a malformed destination (InvalidArgument), a missing token
// (FailedPrecondition).
TEST(ProfileAdapterTest, RefusesWhatCannotBeSent) {
  ProfileAdapter adapter(TelegramSpec());
  for (const char* payload : {"[1,2]", "\"text\"", "not json", "", "{"}) {
    SCOPED_TRACE(payload);
    Result<HttpRequest> r =
        adapter.BuildRequest(Message("42", payload), TokenCredential("t"), kTestNow);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Status::Code::kInvalidArgument);
  }
  for (const char* destination : {"", "a/b", "4 2", "42?x=1"}) {
    SCOPED_TRACE(destination);
    Result<HttpRequest> r =
        adapter.BuildRequest(Message(destination, "{}"), TokenCredential("t"), kTestNow);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Status::Code::kInvalidArgument);
  }
  Result<HttpRequest> no_token =
      adapter.BuildRequest(Message("42", "{}"), TokenCredential(""), kTestNow);
  ASSERT_FALSE(no_token.has_value());
  EXPECT_EQ(no_token.error().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(no_token.error().message(), "the credential has no token");
}

// Verifies the made-up API's request: its method, the destination and delivery id in the path,
// a URL without a secret shown whole, the auth header and the headers from templates, the
// payload sent byte for byte (no body fields: any payload), and traceparent when there is one.
TEST(ProfileAdapterTest, BuildsRequestWithHeadersAndAuth) {
  ProfileAdapter adapter(AcmeSpec());
  storage::Delivery d = Message("room:7@east", R"([1, 2 ,3])");
  d.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  Result<HttpRequest> r = adapter.BuildRequest(d, FullCredential(), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->method, "PUT");
  EXPECT_EQ(r->url, "https://acme.test/api/v2/rooms/room:7@east/messages/" + d.id);
  EXPECT_FALSE(r->secret_url);
  EXPECT_EQ(ShownUrl(*r), r->url);
  EXPECT_EQ(HeaderOf(*r, "Authorization"), "Token tok-1");
  EXPECT_EQ(HeaderOf(*r, "X-Client"), "app-1");
  EXPECT_EQ(HeaderOf(*r, "X-Static"), "yes");
  EXPECT_EQ(HeaderOf(*r, "traceparent"), d.traceparent);
  EXPECT_EQ(r->body, d.payload);
  // Each template's field must be there: a client id for X-Client.
  Credential no_client = FullCredential();
  no_client.client_id.clear();
  Result<HttpRequest> refused = adapter.BuildRequest(d, no_client, kTestNow);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kFailedPrecondition);
  Credential no_token = FullCredential();
  no_token.token.clear();
  EXPECT_EQ(adapter.BuildRequest(d, no_token, kTestNow).error().code(),
            Status::Code::kFailedPrecondition);
}

// Verifies an OAuth2 platform sends its access token as the Bearer header, and cannot build a
// request before one is held.
TEST(ProfileAdapterTest, OAuth2SendsTheAccessToken) {
  ProfileAdapter adapter(TeamsLikeSpec());
  Result<HttpRequest> r = adapter.BuildRequest(Message("c1", "{}"), FullCredential(), kTestNow);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(HeaderOf(*r, "Authorization"), "Bearer access-1");
  EXPECT_FALSE(r->secret_url);
  Credential none = FullCredential();
  none.access_token.clear();
  Result<HttpRequest> refused = adapter.BuildRequest(Message("c1", "{}"), none, kTestNow);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kFailedPrecondition);
}

// Verifies CheckDestination: only the bytes of destination_chars, 1 to destination_max_bytes,
// with a message naming the platform.
TEST(ProfileAdapterTest, ChecksDestinationBytesAndLength) {
  ProfileAdapter telegram(TelegramSpec());
  for (const std::string& ok :
       std::vector<std::string>{"-1001234567890", "@my_channel", "42", std::string(64, '9')}) {
    EXPECT_TRUE(telegram.CheckDestination(ok).ok()) << ok;
  }
  for (const std::string& bad :
       std::vector<std::string>{"", std::string(65, '9'), "a.b", "a:b", "a/b", "a b", "caf\xC3\xA9",
                                std::string("a\0b", 3)}) {
    Status status = telegram.CheckDestination(bad);
    EXPECT_EQ(status.code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("test_telegram destination"), std::string::npos)
        << status.message();
  }
  // The default set: letters, digits and _ . : @ -.
  ProfileAdapter bare(BareSpec());
  EXPECT_TRUE(bare.CheckDestination("19:abc.def@thread-v2_x").ok());
  EXPECT_FALSE(bare.CheckDestination("a/b").ok());
  EXPECT_FALSE(bare.CheckDestination("a%2F").ok());
  EXPECT_FALSE(bare.CheckDestination(std::string(257, 'a')).ok());
  EXPECT_TRUE(bare.CheckDestination(std::string(256, 'a')).ok());
}

// Verifies a Telegram success: 200 with ok true is delivered, message_id is the platform_ref.
TEST(ProfileAdapterTest, TelegramSuccessNeedsOkTrue) {
  const ProfileSpec spec = TelegramSpec();
  AttemptReport ok = Interpret(
      spec, Response(200, {}, R"({"ok":true,"result":{"message_id":4711,"chat":{"id":-1}}})"));
  EXPECT_EQ(Classify(ok.outcome), OutcomeClass::kDelivered);
  EXPECT_EQ(ok.platform_ref, "4711");
  EXPECT_TRUE(ok.outcome.platform_error.empty());
  // 200 without ok true is no success: dead with the status (no rule names 200).
  for (const char* body : {R"({"ok":false,"description":"Bad Request: message is empty"})",
                           R"({"ok":"true"})", R"({"result":{}})", "OK", ""}) {
    SCOPED_TRACE(body);
    AttemptReport r = Interpret(spec, Response(200, {}, body));
    EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDeadLetter);
    EXPECT_EQ(r.outcome.platform_error, "http_200");
    EXPECT_TRUE(r.platform_ref.empty());
  }
  AttemptReport empty = Interpret(spec, Response(200, {}, R"({"ok":false,"description":"x"})"));
  EXPECT_EQ(empty.attempt.detail, "x");
  // A status outside success_statuses is no success, whatever the body.
  AttemptReport other = Interpret(spec, Response(201, {}, R"({"ok":true})"));
  EXPECT_NE(Classify(other.outcome), OutcomeClass::kDelivered);
}

// Verifies the Telegram 429: throttled, the wait from the body's parameters.retry_after (35 s)
// in both the outcome and the observation, the description kept as the detail.
TEST(ProfileAdapterTest, TelegramThrottleWaitsForTheBodyRetryAfter) {
  AttemptReport r = Interpret(TelegramSpec(), Response(429, {}, kTelegram429));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_TRUE(r.outcome.throttled);
  EXPECT_EQ(r.outcome.retry_after, Millis(35'000));
  EXPECT_EQ(r.observation.retry_after, Millis(35'000));
  EXPECT_EQ(r.outcome.platform_error, "http_429");
  EXPECT_EQ(r.attempt.detail, "Too Many Requests: retry after 35");
  EXPECT_FALSE(r.invalidate_credential.has_value());
}

// Verifies a Retry-After header and a body wait together: the longer one wins.
TEST(ProfileAdapterTest, LongerOfHeaderAndBodyWaitWins) {
  const ProfileSpec spec = TelegramSpec();
  AttemptReport body_longer = Interpret(spec, Response(429, {{"Retry-After", "10"}}, kTelegram429));
  EXPECT_EQ(body_longer.outcome.retry_after, Millis(35'000));
  EXPECT_EQ(body_longer.observation.retry_after, Millis(35'000));
  AttemptReport header_longer =
      Interpret(spec, Response(429, {{"Retry-After", "50"}}, kTelegram429));
  EXPECT_EQ(header_longer.outcome.retry_after, Millis(50'000));
  EXPECT_EQ(header_longer.observation.retry_after, Millis(50'000));
  // Neither: throttled, the pacing engine decides the wait.
  AttemptReport none =
      Interpret(spec, Response(429, {}, R"({"ok":false,"error_code":429,"description":"x"})"));
  EXPECT_EQ(Classify(none.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_FALSE(none.outcome.retry_after.has_value());
  EXPECT_FALSE(none.observation.retry_after.has_value());
}

// Verifies the body wait's hostile forms: a string number is read, a negative one is 0, a huge
// one is capped at kMaxRateLimitWait, an object or a missing member gives no wait, and in
// milliseconds when the profile says so.
TEST(ProfileAdapterTest, BodyRetryAfterIsBounded) {
  ProfileSpec spec = TelegramSpec();
  const auto wait = [&](const std::string& value) {
    return Interpret(spec, Response(429, {},
                                    R"({"ok":false,"parameters":{"retry_after":)" + value + "}}"))
        .outcome.retry_after;
  };
  EXPECT_EQ(wait("\"12\""), Millis(12'000));
  EXPECT_EQ(wait("1.5"), Millis(1'500));
  EXPECT_EQ(wait("-5"), Millis(0));
  EXPECT_EQ(wait("1e12"), Millis(kMaxRateLimitWait));
  EXPECT_EQ(wait("1e308"), Millis(kMaxRateLimitWait));
  EXPECT_EQ(wait("{\"s\":3}"), std::nullopt);
  EXPECT_EQ(wait("\"soon\""), std::nullopt);
  EXPECT_EQ(wait("null"), std::nullopt);
  spec.retry_after_unit = ResetUnit::kMilliseconds;
  EXPECT_EQ(wait("1500"), Millis(1'500));
}

// Verifies Telegram's rules: 403 dead as bot_blocked, 400 "chat not found" dead as
// chat_not_found while another 400 is dead with its status, 401 disables the credential.
TEST(ProfileAdapterTest, TelegramRules) {
  const ProfileSpec spec = TelegramSpec();
  AttemptReport blocked = Interpret(
      spec,
      Response(
          403, {},
          R"({"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"})"));
  EXPECT_EQ(Classify(blocked.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(blocked.outcome.platform_error, "bot_blocked");
  EXPECT_EQ(blocked.attempt.detail, "Forbidden: bot was blocked by the user");
  EXPECT_FALSE(blocked.disable_destination.has_value());
  AttemptReport not_found = Interpret(
      spec,
      Response(400, {},
               R"({"ok":false,"error_code":400,"description":"Bad Request: chat not found"})"));
  EXPECT_EQ(Classify(not_found.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(not_found.outcome.platform_error, "chat_not_found");
  AttemptReport empty = Interpret(
      spec,
      Response(
          400, {},
          R"({"ok":false,"error_code":400,"description":"Bad Request: message text is empty"})"));
  EXPECT_EQ(Classify(empty.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(empty.outcome.platform_error, "http_400");
  AttemptReport unauthorized = Interpret(
      spec, Response(401, {}, R"({"ok":false,"error_code":401,"description":"Unauthorized"})"));
  EXPECT_EQ(Classify(unauthorized.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(unauthorized.invalidate_credential, "invalid_token");
  EXPECT_FALSE(unauthorized.access_token_rejected);
}

// Verifies a success's platform_ref from ref_pointer: a string, a number, nothing when absent or
// of another type, and cut to 64 printable bytes.
TEST(ProfileAdapterTest, PlatformRefFromPointer) {
  const ProfileSpec spec = AcmeSpec();
  EXPECT_EQ(Interpret(spec, Response(201, {}, R"({"data":[{"id":"m-7"}]})")).platform_ref, "m-7");
  EXPECT_EQ(Interpret(spec, Response(200, {}, R"({"data":[{"id":12345678901}]})")).platform_ref,
            "12345678901");
  EXPECT_EQ(Interpret(spec, Response(200, {}, R"({"data":[{"id":1.5}]})")).platform_ref, "1.5");
  EXPECT_EQ(Interpret(spec, Response(200, {}, R"({"data":[]})")).platform_ref, "");
  EXPECT_EQ(Interpret(spec, Response(200, {}, R"({"data":[{"id":{"x":1}}]})")).platform_ref, "");
  EXPECT_EQ(Interpret(spec, Response(200, {}, "not json")).platform_ref, "");
  AttemptReport long_ref =
      Interpret(spec, Response(200, {}, R"({"data":[{"id":")" + std::string(500, 'x') + "\"}]}"));
  EXPECT_EQ(long_ref.platform_ref, std::string(64, 'x'));
  EXPECT_EQ(Classify(long_ref.outcome), OutcomeClass::kDelivered);
}

// Verifies the profile's own limit, remaining and reset headers, for each reset unit; an epoch
// reset is measured from received_at.
TEST(ProfileAdapterTest, ReadsItsOwnRateLimitHeaders) {
  // kTestNow is 1,767,225,601,500 ms after the epoch.
  struct Case {
    ResetUnit unit;
    const char* reset;
    Millis want;
  };
  const Case cases[] = {
      {ResetUnit::kSeconds, "2.5", Millis(2'500)},
      {ResetUnit::kMilliseconds, "750", Millis(750)},
      {ResetUnit::kEpochSeconds, "1767225611", Millis(9'500)},
      {ResetUnit::kEpochSeconds, "1767225603.25", Millis(1'750)},
      {ResetUnit::kEpochMilliseconds, "1767225603000", Millis(1'500)},
      {ResetUnit::kEpochSeconds, "1767225000", Millis(0)},  // past: no wait
      {ResetUnit::kEpochMilliseconds, "99999999999999", Millis(kMaxRateLimitWait)},
      {ResetUnit::kSeconds, "1e9", Millis(kMaxRateLimitWait)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reset);
    AttemptReport r = Interpret(
        AcmeSpec(c.unit),
        Response(200,
                 {{"X-Acme-Limit", "100"}, {"x-acme-remaining", "0"}, {"X-Acme-Reset", c.reset}},
                 R"({"data":[{"id":"m"}]})"));
    EXPECT_EQ(r.observation.limit, 100);
    EXPECT_EQ(r.observation.remaining, 0);
    EXPECT_EQ(r.observation.reset_after, c.want);
    EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDelivered);
  }
  // Kept in the attempt's history though their names are not the standard ones.
  AttemptReport r = Interpret(AcmeSpec(), Response(200, {{"X-Acme-Remaining", "3"}}, "{}"));
  ASSERT_EQ(r.attempt.rate_limit_headers.size(), 1u);
  EXPECT_EQ(r.attempt.rate_limit_headers[0].first, "X-Acme-Remaining");
  EXPECT_EQ(r.attempt.rate_limit_headers[0].second, "3");
}

// Verifies garbage in the profile's own rate-limit headers teaches nothing.
TEST(ProfileAdapterTest, IgnoresGarbageRateLimitHeaders) {
  AttemptReport r = Interpret(
      AcmeSpec(),
      Response(200, {{"X-Acme-Limit", "0"}, {"X-Acme-Remaining", "-1"}, {"X-Acme-Reset", "soon"}},
               "{}"));
  EXPECT_FALSE(r.observation.limit.has_value());
  EXPECT_FALSE(r.observation.remaining.has_value());
  EXPECT_FALSE(r.observation.reset_after.has_value());
  AttemptReport huge = Interpret(
      AcmeSpec(),
      Response(200,
               {{"X-Acme-Limit", "1e300"}, {"X-Acme-Remaining", "nan"}, {"X-Acme-Reset", "inf"}},
               "{}"));
  EXPECT_FALSE(huge.observation.limit.has_value());
  EXPECT_FALSE(huge.observation.remaining.has_value());
  EXPECT_FALSE(huge.observation.reset_after.has_value());
}

// Verifies a wait header of the profile's naming, in its unit (milliseconds here).
TEST(ProfileAdapterTest, ReadsItsOwnWaitHeader) {
  AttemptReport r = Interpret(AcmeSpec(), Response(429, {{"x-acme-wait", "1500"}}, ""));
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(r.outcome.retry_after, Millis(1'500));
  EXPECT_EQ(r.observation.retry_after, Millis(1'500));
  AttemptReport garbage = Interpret(AcmeSpec(), Response(429, {{"X-Acme-Wait", "later"}}, ""));
  EXPECT_EQ(Classify(garbage.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_FALSE(garbage.outcome.retry_after.has_value());
}

// Verifies rules are tried in order and the first match decides: 409 with "duplicate" is
// delivered; a 400 naming an archived room disables the destination even when it also says
// bad_key; bad_key disables the credential; any other 400 is dead as bad_request; "slow_down"
// in any status throttles.
TEST(ProfileAdapterTest, RulesApplyInOrder) {
  const ProfileSpec spec = AcmeSpec();
  AttemptReport duplicate =
      Interpret(spec, Response(409, {}, R"({"error":{"message":"duplicate message"}})"));
  EXPECT_EQ(Classify(duplicate.outcome), OutcomeClass::kDelivered);
  EXPECT_TRUE(duplicate.outcome.accepted);
  AttemptReport conflict = Interpret(spec, Response(409, {}, R"({"error":{"message":"x"}})"));
  EXPECT_EQ(Classify(conflict.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(conflict.outcome.platform_error, "http_409");

  AttemptReport archived = Interpret(
      spec, Response(400, {}, R"({"error":{"code":"room_archived bad_key","message":"gone"}})"));
  EXPECT_EQ(Classify(archived.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(archived.disable_destination, "room_archived");
  EXPECT_FALSE(archived.invalidate_credential.has_value());
  EXPECT_EQ(archived.outcome.platform_error, "room_archived");
  EXPECT_EQ(archived.attempt.detail, "gone");
  AttemptReport archived_422 = Interpret(spec, Response(422, {}, "room_archived"));
  EXPECT_EQ(archived_422.disable_destination, "room_archived");

  AttemptReport bad_key = Interpret(spec, Response(400, {}, R"({"error":"bad_key"})"));
  EXPECT_EQ(Classify(bad_key.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(bad_key.invalidate_credential, "bad_key");
  EXPECT_FALSE(bad_key.disable_destination.has_value());

  AttemptReport bad = Interpret(spec, Response(400, {}, R"({"error":{"message":"no text"}})"));
  EXPECT_EQ(Classify(bad.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(bad.outcome.platform_error, "bad_request");
  EXPECT_FALSE(bad.invalidate_credential.has_value());
  EXPECT_FALSE(bad.disable_destination.has_value());

  AttemptReport slow = Interpret(spec, Response(503, {{"X-Acme-Wait", "250"}}, "slow_down"));
  EXPECT_EQ(Classify(slow.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(slow.outcome.platform_error, "slow_down");
  EXPECT_EQ(slow.outcome.retry_after, Millis(250));
}

// Verifies a rule's retry is a retry whatever the status: the shipped Teams profile retries 412
// (precondition_failed) this way.
TEST(ProfileAdapterTest, RetryRuleRetriesWhateverTheStatus) {
  const ProfileSpec spec = AcmeSpec();
  AttemptReport precondition = Interpret(spec, Response(412, {}, R"({"error":{"message":"p"}})"));
  EXPECT_EQ(precondition.outcome.platform_error, "precondition_failed");
  EXPECT_FALSE(precondition.outcome.permanent);
  EXPECT_EQ(Classify(precondition.outcome), OutcomeClass::kRetry);
  ProfileSpec on_2xx = AcmeSpec();
  on_2xx.rules = {Rule({202}, "", ProfileAction::kRetry, "queued_elsewhere")};
  AttemptReport accepted_later = Interpret(on_2xx, Response(202, {}, "{}"));
  EXPECT_EQ(Classify(accepted_later.outcome), OutcomeClass::kRetry);
}

// Verifies a status listed in success_statuses is a success even outside 2xx (the header says
// "a status in spec.success_statuses ... is delivered").
TEST(ProfileAdapterTest, SuccessStatusOutside2xxIsDelivered) {
  ProfileSpec spec = BareSpec();
  spec.success_statuses = {200, 409};
  spec.ref_pointer = "/id";
  AttemptReport r = Interpret(spec, Response(409, {}, R"({"id":"already-1"})"));
  EXPECT_EQ(r.platform_ref, "already-1");
  EXPECT_EQ(Classify(r.outcome), OutcomeClass::kDelivered);
}

// Verifies the defaults without rules: 429 throttled, 503 and 408 retried (503's Retry-After
// kept), 401 disables the credential, 400 / 404 / 302 dead with http_<status>.
TEST(ProfileAdapterTest, DefaultClassification) {
  const ProfileSpec spec = BareSpec();
  AttemptReport throttled = Interpret(spec, Response(429, {{"Retry-After", "3"}}, ""));
  EXPECT_EQ(Classify(throttled.outcome), OutcomeClass::kBudgetExhausted);
  EXPECT_EQ(throttled.outcome.retry_after, Millis(3'000));
  EXPECT_EQ(throttled.observation.retry_after, Millis(3'000));
  EXPECT_EQ(throttled.outcome.platform_error, "http_429");

  AttemptReport unavailable = Interpret(spec, Response(503, {{"Retry-After", "7"}}, "down"));
  EXPECT_EQ(Classify(unavailable.outcome), OutcomeClass::kRetry);
  EXPECT_EQ(unavailable.outcome.platform_error, "http_503");
  EXPECT_EQ(unavailable.outcome.retry_after, Millis(7'000));
  EXPECT_EQ(unavailable.attempt.detail, "down");

  AttemptReport timeout = Interpret(spec, Response(408, {}, ""));
  EXPECT_EQ(Classify(timeout.outcome), OutcomeClass::kRetry);
  EXPECT_EQ(timeout.outcome.platform_error, "http_408");

  AttemptReport unauthorized = Interpret(spec, Response(401, {}, ""));
  EXPECT_EQ(Classify(unauthorized.outcome), OutcomeClass::kDeadLetter);
  EXPECT_EQ(unauthorized.invalidate_credential, "http_401");
  EXPECT_FALSE(unauthorized.access_token_rejected);

  for (int status : {400, 404, 302, 418}) {
    SCOPED_TRACE(status);
    AttemptReport dead = Interpret(spec, Response(status, {}, ""));
    EXPECT_EQ(Classify(dead.outcome), OutcomeClass::kDeadLetter);
    EXPECT_EQ(dead.outcome.platform_error, "http_" + std::to_string(status));
    EXPECT_FALSE(dead.invalidate_credential.has_value());
    EXPECT_FALSE(dead.disable_destination.has_value());
  }
  AttemptReport delivered = Interpret(spec, Response(204, {}, ""));
  EXPECT_EQ(Classify(delivered.outcome), OutcomeClass::kDelivered);
}

// Verifies an OAuth2 platform's 401 drops the access token (access_token_rejected) rather than
// invalidating the credential; any other status a disable_credential rule names still does.
TEST(ProfileAdapterTest, OAuth2UnauthorizedRejectsTheAccessTokenOnly) {
  ProfileSpec spec = TeamsLikeSpec();
  AttemptReport r = Interpret(spec, Response(401, {}, R"({"error":{"code":"Unauthorized"}})"));
  EXPECT_TRUE(r.access_token_rejected);
  EXPECT_FALSE(r.invalidate_credential.has_value());
  EXPECT_FALSE(r.outcome.permanent);
  EXPECT_EQ(r.outcome.platform_error, "http_401");
  spec.rules = {Rule({401, 403}, "", ProfileAction::kDisableCredential, "bot_removed")};
  AttemptReport by_rule = Interpret(spec, Response(401, {}, ""));
  EXPECT_TRUE(by_rule.access_token_rejected);
  EXPECT_FALSE(by_rule.invalidate_credential.has_value());
  EXPECT_EQ(by_rule.outcome.platform_error, "bot_removed");
  AttemptReport forbidden = Interpret(spec, Response(403, {}, ""));
  EXPECT_FALSE(forbidden.access_token_rejected);
  EXPECT_EQ(forbidden.invalidate_credential, "bot_removed");
  EXPECT_EQ(Classify(forbidden.outcome), OutcomeClass::kDeadLetter);
}

// Verifies a transport error (no response) is reported as the transport's failure, retried.
TEST(ProfileAdapterTest, TransportErrors) {
  const ProfileSpec spec = TelegramSpec();
  AttemptReport timeout = Interpret(spec, Status::TimedOut("no answer in 15 s"));
  EXPECT_EQ(timeout.outcome.transport, pacing::TransportResult::kTimeout);
  EXPECT_EQ(Classify(timeout.outcome), OutcomeClass::kRetry);
  EXPECT_EQ(timeout.attempt.at_ms, ToUnixMillis(kTestNow));
  AttemptReport refused = Interpret(spec, Status::Unavailable("connection refused"));
  EXPECT_EQ(refused.outcome.transport, pacing::TransportResult::kConnectError);
  EXPECT_EQ(Classify(refused.outcome), OutcomeClass::kRetry);
  EXPECT_TRUE(refused.platform_ref.empty());
}

// Verifies hostile bodies never crash and never read as a success: binary garbage, truncated
// JSON, JSON nested past the parser's bound, a top-level array or string, a huge body (its
// detail cut to 120 bytes) and a huge error text.
TEST(ProfileAdapterTest, HostileBodies) {
  const ProfileSpec spec = TelegramSpec();
  const std::string bodies[] = {
      std::string("\0\xff\xfe", 3) + "{\"ok\":true}",
      "{\"ok\":true",
      std::string(100'000, '[') + std::string(100'000, ']'),
      "[true]",
      "\"ok\"",
      "{\"ok\":true,\"result\":" + std::string(600, '[') + std::string(600, ']') + "}",
      std::string(2'000'000, 'x'),
  };
  for (const std::string& body : bodies) {
    SCOPED_TRACE(body.substr(0, 30));
    for (int status : {200, 400, 429, 500}) {
      AttemptReport r = Interpret(spec, Response(status, {}, body));
      EXPECT_NE(Classify(r.outcome), OutcomeClass::kDelivered) << status;
      EXPECT_LE(r.attempt.detail.size(), 120u);
      EXPECT_LE(r.platform_ref.size(), 64u);
    }
  }
  AttemptReport long_text = Interpret(
      spec,
      Response(400, {}, R"({"ok":false,"description":")" + std::string(100'000, 'd') + "\"}"));
  EXPECT_EQ(long_text.attempt.detail, std::string(120, 'd'));
  AttemptReport control =
      Interpret(spec, Response(400, {}, "{\"ok\":false,\"description\":\"a\\u0000b\\nc\\u00e9\"}"));
  EXPECT_EQ(control.attempt.detail, "a?b?c??");
}

// Verifies ParseByteSet: ranges, single bytes, a '-' first or last is itself, a range of one
// byte; an inverted range or an empty text is InvalidArgument.
TEST(ProfileAdapterTest, ParseByteSet) {
  Result<std::array<bool, 256>> set = ParseByteSet("a-cX_-");
  ASSERT_TRUE(set.has_value());
  for (char c : std::string("abcX_-")) {
    EXPECT_TRUE((*set)[static_cast<unsigned char>(c)]) << c;
  }
  for (char c : std::string("dA`Y/ ")) {
    EXPECT_FALSE((*set)[static_cast<unsigned char>(c)]) << c;
  }
  Result<std::array<bool, 256>> leading = ParseByteSet("-0-2");
  ASSERT_TRUE(leading.has_value());
  EXPECT_TRUE((*leading)['-']);
  EXPECT_TRUE((*leading)['1']);
  EXPECT_FALSE((*leading)['3']);
  Result<std::array<bool, 256>> one = ParseByteSet("q-q");
  ASSERT_TRUE(one.has_value());
  int count = 0;
  for (bool b : *one) {
    count += b ? 1 : 0;
  }
  EXPECT_EQ(count, 1);
  Result<std::array<bool, 256>> high = ParseByteSet("\x80-\xff");
  ASSERT_TRUE(high.has_value());
  EXPECT_TRUE((*high)[0xff]);
  EXPECT_TRUE((*high)[0x80]);
  EXPECT_FALSE((*high)[0x7f]);
  Result<std::array<bool, 256>> inverted = ParseByteSet("a-Z");
  ASSERT_FALSE(inverted.has_value());
  EXPECT_EQ(inverted.error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(inverted.error().message(), "an inverted range in destination_chars");
  Result<std::array<bool, 256>> empty = ParseByteSet("");
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().message(), "destination_chars names no byte");
  // The shipped default.
  Result<std::array<bool, 256>> standard = ParseByteSet(ProfileSpec{}.destination_chars);
  ASSERT_TRUE(standard.has_value());
  for (char c : std::string("azAZ09_.:@-")) {
    EXPECT_TRUE((*standard)[static_cast<unsigned char>(c)]) << c;
  }
  for (char c : std::string("/?#% ")) {
    EXPECT_FALSE((*standard)[static_cast<unsigned char>(c)]) << c;
  }
}

// Verifies a spec whose destination_chars is invalid (the loader refuses it) allows nothing
// rather than everything.
TEST(ProfileAdapterTest, InvalidByteSetAllowsNoDestination) {
  ProfileSpec spec = BareSpec();
  spec.destination_chars = "z-a";
  ProfileAdapter adapter(spec);
  EXPECT_FALSE(adapter.CheckDestination("a").ok());
  EXPECT_FALSE(adapter.CheckDestination("z").ok());
}

}  // namespace
}  // namespace egress::adapters
