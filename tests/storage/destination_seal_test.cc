#include "storage/destination_seal.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "storage/delivery.h"
#include "storage/rocks_queue_store.h"
#include "tests/support/store_audit.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = 1'767'225'600'000;
constexpr std::string_view kHexKey =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
constexpr std::string_view kOtherKey =
    "ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
// A Discord webhook whose token is the secret, and a URL with a secret query value.
constexpr std::string_view kWebhook = "webhooks/123456/HOOKTOKENsecret-abcdef";
constexpr std::string_view kQueryUrl = "https://hooks.example.test/in?token=QUERYSECRETvalue";

SecretsKey Key(std::string_view text = kHexKey) {
  Result<SecretsKey> k = SecretsKey::Parse(text);
  EXPECT_TRUE(k.has_value());
  return k.has_value() ? *k : SecretsKey();
}

// Verifies the seal is deterministic, round-trips, leaves destinations without a secret as they
// are, seals one that looks sealed, and refuses another key or an altered text with Corruption.
TEST(DestinationSealTest, SealsOnlySecretsDeterministically) {
  const DestinationSeal seal{std::optional<SecretsKey>(Key())};
  const std::string a = seal.Stored(kWebhook);
  EXPECT_TRUE(a.starts_with(kSealedDestinationPrefix)) << a;
  EXPECT_EQ(a.find("HOOKTOKEN"), std::string::npos);
  EXPECT_EQ(a, seal.Stored(kWebhook));  // one destination, one stored form
  EXPECT_NE(a, seal.Stored("webhooks/123456/HOOKTOKENsecret-abcdeF"));
  EXPECT_EQ(a.find('\x1f'), std::string::npos);
  ASSERT_TRUE(seal.Open(a).has_value()) << seal.Open(a).error().ToString();
  EXPECT_EQ(*seal.Open(a), kWebhook);
  ASSERT_TRUE(seal.Open(seal.Stored(kQueryUrl)).has_value());
  EXPECT_EQ(*seal.Open(seal.Stored(kQueryUrl)), kQueryUrl);
  for (std::string_view plain : {"C0123", "123456789", "https://example.test/hook", "U1"}) {
    EXPECT_EQ(seal.Stored(plain), plain);
    EXPECT_EQ(*seal.Open(plain), plain);
  }
  // Which destinations are sealed decides their stored keys, so it stays as stores were first
  // sealed: a '%' alone (which redaction now looks at) does not send one to be sealed.
  EXPECT_EQ(seal.Stored("bot12%3As3cr3t"), "bot12%3As3cr3t");
  EXPECT_TRUE(seal.Stored("bot12:s3cr3t").starts_with(kSealedDestinationPrefix));
  // A tenant's destination that looks sealed is sealed too, so the stored form is never ambiguous.
  const std::string lookalike = std::string(kSealedDestinationPrefix) + "00";
  EXPECT_NE(seal.Stored(lookalike), lookalike);
  EXPECT_EQ(*seal.Open(seal.Stored(lookalike)), lookalike);

  const DestinationSeal other{std::optional<SecretsKey>(Key(kOtherKey))};
  EXPECT_EQ(other.Open(a).error().code(), Status::Code::kCorruption);
  std::string altered = a;
  altered.back() = altered.back() == '0' ? '1' : '0';
  EXPECT_EQ(seal.Open(altered).error().code(), Status::Code::kCorruption);
  for (std::string_view bad : {"~sealed1:", "~sealed1:zz", "~sealed1:0011"}) {
    EXPECT_EQ(seal.Open(bad).error().code(), Status::Code::kCorruption) << bad;
  }
  const DestinationSeal none{std::nullopt};
  EXPECT_EQ(none.Stored(kWebhook), kWebhook);
  EXPECT_EQ(none.Open(a).error().code(), Status::Code::kFailedPrecondition);
}

// Verifies only the destination part of a destination key changes, and back.
TEST(DestinationSealTest, KeysSealTheirDestinationPart) {
  const DestinationSeal seal{std::optional<SecretsKey>(Key())};
  const std::string key = DestinationKeyOf("discord", "acme", "hook", kWebhook);
  const std::string stored = seal.StoredKey(key);
  EXPECT_TRUE(
      stored.starts_with("discord\x1f"
                         "acme\x1f"
                         "hook\x1f~sealed1:"))
      << stored;
  EXPECT_EQ(*seal.OpenKey(stored), key);
  const std::string plain = DestinationKeyOf("slack", "acme", "bot", "C1");
  EXPECT_EQ(seal.StoredKey(plain), plain);
  EXPECT_EQ(seal.StoredKey("not a key"), "not a key");
}

NewDelivery Webhook(std::string_view destination, std::string_view platform = "discord") {
  return {.tenant = "acme",
          .platform = std::string(platform),
          .destination = std::string(destination),
          .credential = "hook",
          .payload = "{}"};
}

// Verifies a store with a key keeps secret destinations sealed in every file, while every read
// (Get, List, PendingFor, ListDestinations, DestinationCounts) answers them opened.
TEST(DestinationSealTest, StoreKeepsSecretDestinationsSealedAtRest) {
  TempDir dir;
  StoreOptions options{.path = dir.Sub("store")};
  options.secrets_key = Key();
  std::string queued_id;
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    auto a = (*store)->Enqueue(Webhook(kWebhook), kT0);
    auto b = (*store)->Enqueue(Webhook(kQueryUrl, "webhook"), kT0);
    auto c = (*store)->Enqueue(Webhook("C1", "slack"), kT0);
    ASSERT_TRUE(a.has_value() && b.has_value() && c.has_value());
    queued_id = a->id;
    auto done = (*store)->Apply(b->id, {.to = DeliveryState::kCancelled, .at_ms = kT0 + 1});
    ASSERT_TRUE(done.has_value()) << done.error().ToString();
    EXPECT_EQ(done->destination, kQueryUrl);
    ASSERT_TRUE((*store)->Close().ok());
  }
  const std::string bytes = AllFileBytes(options.path);
  EXPECT_EQ(bytes.find("HOOKTOKEN"), std::string::npos);
  EXPECT_EQ(bytes.find("QUERYSECRET"), std::string::npos);
  EXPECT_TRUE(AuditStore(options.path).empty());

  auto store = OpenRocksQueueStore(options, kT0);
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
  EXPECT_EQ((*store)->Get(queued_id)->destination, kWebhook);
  const std::string key = DestinationKeyOf("discord", "acme", "hook", kWebhook);
  auto keys = (*store)->ListDestinations("", 10);
  ASSERT_TRUE(keys.has_value());
  EXPECT_NE(std::find(keys->begin(), keys->end(), key), keys->end());
  auto work = (*store)->PendingFor(key, "", 10);
  ASSERT_TRUE(work.has_value());
  ASSERT_EQ(work->deliveries.size(), 1u);
  EXPECT_TRUE(work->corrupt.empty());
  EXPECT_EQ(work->deliveries[0].destination, kWebhook);
  auto counts = (*store)->DestinationCounts({key});
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(CountOf((*counts)[0], DeliveryState::kQueued), 1u);
  auto page = (*store)->List({.destination = std::string(kQueryUrl)});
  ASSERT_TRUE(page.has_value());
  ASSERT_EQ(page->deliveries.size(), 1u);
  EXPECT_EQ(page->deliveries[0].destination, kQueryUrl);
  auto leased = (*store)->LeaseDue(kT0 + 5, 10);
  ASSERT_TRUE(leased.has_value());
  EXPECT_EQ(leased->size(), 2u);

  // Another key is refused at open, naming the problem.
  ASSERT_TRUE((*store)->Close().ok());
  options.secrets_key = Key(kOtherKey);
  auto wrong = OpenRocksQueueStore(options, kT0);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), Status::Code::kCorruption);
  EXPECT_NE(wrong.error().message().find("sealed with another secrets key"), std::string::npos)
      << wrong.error().message();

  // So is a writable open without a key: it could read none of the sealed destinations.
  options.secrets_key.reset();
  auto keyless = OpenRocksQueueStore(options, kT0);
  ASSERT_FALSE(keyless.has_value());
  EXPECT_EQ(keyless.error().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(keyless.error().message().find("destinations are sealed"), std::string::npos)
      << keyless.error().message();
}

// Verifies the migration: records, index entries and counters written without a key (an older
// build) are sealed by the first open with one, the plaintext leaves every file, and the work
// is found and counted as before.
TEST(DestinationSealTest, OpenSealsDestinationsWrittenWithoutAKey) {
  TempDir dir;
  StoreOptions options{.path = dir.Sub("store")};
  std::string queued_id;
  std::string dead_id;
  {
    auto old = OpenRocksQueueStore(options, kT0);  // no key
    ASSERT_TRUE(old.has_value());
    auto a = (*old)->Enqueue(Webhook(kWebhook), kT0);
    auto b = (*old)->Enqueue(Webhook(kWebhook), kT0);
    ASSERT_TRUE(a.has_value() && b.has_value());
    queued_id = a->id;
    dead_id = b->id;
    ASSERT_TRUE(
        (*old)->Apply(dead_id, {.to = DeliveryState::kDead, .at_ms = kT0 + 1, .reason = "x"}));
    ASSERT_TRUE((*old)->Close().ok());
  }
  ASSERT_NE(AllFileBytes(options.path).find("HOOKTOKEN"), std::string::npos);
  options.secrets_key = Key();
  const std::string key = DestinationKeyOf("discord", "acme", "hook", kWebhook);
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    auto work = (*store)->PendingFor(key, "", 10);
    ASSERT_TRUE(work.has_value());
    ASSERT_EQ(work->deliveries.size(), 1u);
    EXPECT_EQ(work->deliveries[0].id, queued_id);
    EXPECT_EQ(CountOf((*(*store)->DestinationCounts({key}))[0], DeliveryState::kQueued), 1u);
    EXPECT_EQ((*store)->Get(dead_id)->destination, kWebhook);
    auto keys = (*store)->ListDestinations("", 10);
    ASSERT_TRUE(keys.has_value());
    ASSERT_EQ(keys->size(), 1u);
    EXPECT_EQ((*keys)[0], key);
    ASSERT_TRUE((*store)->Close().ok());
  }
  EXPECT_EQ(AllFileBytes(options.path).find("HOOKTOKEN"), std::string::npos);
  EXPECT_TRUE(AuditStore(options.path).empty());
}

}  // namespace
}  // namespace egress::storage
