#include "adapters/webhook_signer.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// Standard Webhooks' published vector (see webhook_signature_test.cc).
constexpr std::string_view kSpecId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kSpecTimestamp = 1614265330;
constexpr std::string_view kSpecBody = R"({"test": 2432232314})";
constexpr std::string_view kSpecSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

WebhookKey SpecKey() {
  return ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").value();
}

// Verifies that a prepared signer gives the published signature, and the same again for every
// later message (the keyed state is copied, never consumed).
TEST(WebhookSignerTest, SignsRepeatedlyWithThePreparedKey) {
  const WebhookKey key = SpecKey();
  const WebhookSigner signer({&key, 1});
  EXPECT_EQ(signer.key_count(), 1u);
  for (int i = 0; i < 3; ++i) {
    std::string out;
    signer.Append(kSpecId, kSpecTimestamp, kSpecBody, &out);
    EXPECT_EQ(out, kSpecSignature);
    std::string other;
    signer.Append("msg_other", kSpecTimestamp + i, kSpecBody, &other);
    EXPECT_EQ(other, WebhookSignatureEntry(key, "msg_other", kSpecTimestamp + i, kSpecBody));
  }
}

// Verifies one space-separated entry per key, in key order, appended after what `out` held;
// keys longer than SHA-256's block are hashed first, as RFC 2104 says.
TEST(WebhookSignerTest, AppendsOneEntryPerKeyInOrder) {
  const std::vector<WebhookKey> keys = {SpecKey(), WebhookKey{std::string(100, 'z')},
                                        WebhookKey{std::string(24, 'y')}};
  const WebhookSigner signer(keys);
  std::string out = "prefix:";
  signer.Append(kSpecId, -7, "", &out);
  std::string want = "prefix:";
  for (size_t i = 0; i < keys.size(); ++i) {
    want += (i > 0 ? " " : "") + WebhookSignatureEntry(keys[i], kSpecId, -7, "");
  }
  EXPECT_EQ(out, want);
}

// Verifies that threads sharing one signer each get the right signature.
TEST(WebhookSignerTest, IsSafeToShareBetweenThreads) {
  const WebhookKey key = SpecKey();
  const WebhookSigner signer({&key, 1});
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        std::string out;
        signer.Append(kSpecId, kSpecTimestamp, kSpecBody, &out);
        mismatches[t] += out != kSpecSignature ? 1 : 0;
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace egress::adapters
