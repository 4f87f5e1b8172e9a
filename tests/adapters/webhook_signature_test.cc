#include "adapters/webhook_signature.h"

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "adapters/base64.h"

namespace egress::adapters {
namespace {

// The published vector from standard-webhooks/standard-webhooks
// libraries/javascript/src/webhook.test.ts, test "sign function works":
//   key "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", msgId "msg_p5jXN8AQM9LWM0D4loKWxJek",
//   timestamp 1614265330, payload '{"test": 2432232314}',
//   expected "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".
constexpr std::string_view kSpecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr std::string_view kSpecId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kSpecTimestamp = 1614265330;
constexpr std::string_view kSpecBody = R"({"test": 2432232314})";
constexpr std::string_view kSpecSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

WallTime AtUnixSeconds(int64_t s) { return WallTime(std::chrono::seconds(s)); }

WebhookKey SpecKey() {
  Result<WebhookKey> key = ParseWebhookSecret(kSpecSecret);
  EXPECT_TRUE(key.has_value()) << key.status().ToString();
  return key.value_or(WebhookKey{});
}

WebhookKey OtherKey() { return WebhookKey{std::string(32, 'k')}; }

// Verifies our signature equals the Standard Webhooks reference library's published vector.
TEST(WebhookSignatureTest, MatchesSpecTestVector) {
  WebhookKey key = SpecKey();
  EXPECT_EQ(WebhookSignatureEntry(key, kSpecId, kSpecTimestamp, kSpecBody), kSpecSignature);
  std::vector<WebhookKey> keys = {key};
  // Sub-second parts of the attempt time are dropped, not rounded.
  WallTime attempt = AtUnixSeconds(kSpecTimestamp) + std::chrono::milliseconds(999);
  Result<WebhookSignatureHeaders> headers = SignWebhook(keys, kSpecId, attempt, kSpecBody);
  ASSERT_TRUE(headers.has_value()) << headers.status().ToString();
  EXPECT_EQ(headers->id, kSpecId);
  EXPECT_EQ(headers->timestamp, "1614265330");
  EXPECT_EQ(headers->signature, kSpecSignature);
}

// Verifies the HMAC against OpenSSL's one-shot HMAC() for keys shorter than, equal to and longer
// than SHA-256's 64-byte block (a longer key is hashed first, RFC 2104), negative timestamps
// and an empty body included.
TEST(WebhookSignatureTest, MatchesOpenSslHmacForEveryKeySize) {
  for (size_t key_size : {1, 24, 32, 63, 64, 65, 131}) {
    for (int64_t timestamp : {int64_t{0}, kSpecTimestamp, int64_t{-5}}) {
      for (std::string_view body : {std::string_view(), kSpecBody}) {
        WebhookKey key{std::string(key_size, '\xaa')};
        key.bytes[0] = static_cast<char>(key_size);
        const std::string message =
            std::string(kSpecId) + "." + std::to_string(timestamp) + "." + std::string(body);
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int digest_len = 0;
        HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest,
             &digest_len);
        const std::string expected =
            "v1," + Base64Encode(std::string(reinterpret_cast<char*>(digest), digest_len));
        EXPECT_EQ(WebhookSignatureEntry(key, kSpecId, timestamp, body), expected)
            << "key " << key_size << " bytes, timestamp " << timestamp;
      }
    }
  }
}

// Verifies that bad secrets are InvalidArgument with a message naming the problem.
TEST(WebhookSignatureTest, RejectsBadSecrets) {
  struct Case {
    std::string secret;
    std::string message_part;
  };
  const Case cases[] = {
      {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_"},
      {"whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_"},
      {"whsec_", "0 bytes"},
      {"whsec_not*base64!", "base64"},
      {"whsec_" + Base64Encode(std::string(23, 'a')), "23 bytes"},
      {"whsec_" + Base64Encode(std::string(65, 'a')), "65 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.secret);
    Result<WebhookKey> key = ParseWebhookSecret(c.secret);
    ASSERT_FALSE(key.has_value());
    EXPECT_EQ(key.error().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(key.error().message().find(c.message_part), std::string::npos)
        << key.error().message();
  }
  EXPECT_TRUE(ParseWebhookSecret("whsec_" + Base64Encode(std::string(64, 'a'))).has_value());
}

// Verifies that a rotation signs with every key, space-separated, current key first.
TEST(WebhookSignatureTest, SignsWithEveryKeyDuringRotation) {
  std::vector<WebhookKey> keys = {SpecKey(), OtherKey()};
  Result<WebhookSignatureHeaders> headers =
      SignWebhook(keys, kSpecId, AtUnixSeconds(kSpecTimestamp), kSpecBody);
  ASSERT_TRUE(headers.has_value());
  std::string other = WebhookSignatureEntry(OtherKey(), kSpecId, kSpecTimestamp, kSpecBody);
  EXPECT_EQ(headers->signature, std::string(kSpecSignature) + " " + other);
  // A receiver that knows only the old key, or only the new one, accepts it.
  WallTime now = AtUnixSeconds(kSpecTimestamp + 10);
  EXPECT_TRUE(VerifyWebhook(std::vector<WebhookKey>{SpecKey()}, *headers, kSpecBody, now).ok());
  EXPECT_TRUE(VerifyWebhook(std::vector<WebhookKey>{OtherKey()}, *headers, kSpecBody, now).ok());
}

// Verifies that signing refuses an empty key list and ids that are empty or contain '.'.
TEST(WebhookSignatureTest, SignRefusesBadInput) {
  std::vector<WebhookKey> keys = {SpecKey()};
  WallTime t = AtUnixSeconds(kSpecTimestamp);
  EXPECT_EQ(SignWebhook({}, kSpecId, t, kSpecBody).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(SignWebhook(keys, "", t, kSpecBody).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(SignWebhook(keys, "msg.1", t, kSpecBody).status().code(),
            Status::Code::kInvalidArgument);
}

// Verifies the verifier's decisions over a table of tampered and well-formed headers.
TEST(WebhookSignatureTest, VerifiesTable) {
  using Code = Status::Code;
  const std::string good(kSpecSignature);
  const std::string wrong = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";
  struct Case {
    std::string name;
    WebhookSignatureHeaders headers;
    std::string body;
    int64_t now_offset_s;
    Code want;
  };
  const std::string ts = std::to_string(kSpecTimestamp);
  const std::string id(kSpecId);
  const std::string body(kSpecBody);
  const Case cases[] = {
      {"exact", {id, ts, good}, body, 0, Code::kOk},
      {"among others", {id, ts, wrong + " v2,abc  " + good + " v1a,xyz"}, body, 0, Code::kOk},
      {"tolerance edge late", {id, ts, good}, body, 300, Code::kOk},
      {"tolerance edge early", {id, ts, good}, body, -300, Code::kOk},
      {"too old", {id, ts, good}, body, 301, Code::kRejected},
      {"from the future", {id, ts, good}, body, -301, Code::kRejected},
      {"body re-serialised", {id, ts, good}, R"({"test":2432232314})", 0, Code::kRejected},
      {"other id", {"msg_other", ts, good}, body, 0, Code::kRejected},
      {"wrong signature", {id, ts, wrong}, body, 0, Code::kRejected},
      {"truncated", {id, ts, good.substr(0, 8)}, body, 0, Code::kRejected},
      {"bare v1,", {id, ts, "v1,"}, body, 0, Code::kRejected},
      {"no version", {id, ts, good.substr(3)}, body, 0, Code::kRejected},
      {"missing id", {"", ts, good}, body, 0, Code::kInvalidArgument},
      {"missing signature", {id, ts, ""}, body, 0, Code::kInvalidArgument},
      {"missing timestamp", {id, "", good}, body, 0, Code::kInvalidArgument},
      {"garbage timestamp", {id, "hello", good}, body, 0, Code::kInvalidArgument},
      {"float timestamp", {id, ts + ".5", good}, body, 0, Code::kInvalidArgument},
      {"huge timestamp", {id, "99999999999999999999", good}, body, 0, Code::kInvalidArgument},
  };
  std::vector<WebhookKey> keys = {OtherKey(), SpecKey()};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status s =
        VerifyWebhook(keys, c.headers, c.body, AtUnixSeconds(kSpecTimestamp + c.now_offset_s));
    EXPECT_EQ(s.code(), c.want) << s.ToString();
  }
}

// Verifies that a custom tolerance window is honoured.
TEST(WebhookSignatureTest, HonoursCustomTolerance) {
  std::vector<WebhookKey> keys = {SpecKey()};
  WebhookSignatureHeaders headers{std::string(kSpecId), std::to_string(kSpecTimestamp),
                                  std::string(kSpecSignature)};
  WallTime now = AtUnixSeconds(kSpecTimestamp + 11);
  EXPECT_EQ(VerifyWebhook(keys, headers, kSpecBody, now, std::chrono::seconds(10)).code(),
            Status::Code::kRejected);
  EXPECT_TRUE(VerifyWebhook(keys, headers, kSpecBody, now, std::chrono::seconds(11)).ok());
}

}  // namespace
}  // namespace egress::adapters
