#include "storage/setting_seal.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "storage/rocks_queue_store.h"
#include "storage/secrets_key.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = 1'767'225'600'000;
constexpr std::string_view kHexKey =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

SecretsKey Key(std::string_view text = kHexKey) {
  Result<SecretsKey> k = SecretsKey::Parse(text);
  EXPECT_TRUE(k.has_value());
  return k.has_value() ? *k : SecretsKey();
}

// Verifies the key forms: 64 hex digits or base64 of 32 bytes, white space ignored; anything else
// is InvalidArgument without the text in the message.
TEST(SecretsKeyTest, ParsesHexAndBase64Only) {
  EXPECT_EQ(Key().Hex(), kHexKey);
  EXPECT_EQ(Key(std::string(kHexKey) + "\n").Hex(), kHexKey);
  // The same 32 bytes in base64.
  EXPECT_EQ(Key("ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8=").Hex(), kHexKey);
  for (std::string bad :
       {std::string(""), std::string(63, 'a'), std::string(65, 'a'), std::string(63, 'a') + "g",
        std::string("ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8"),
        std::string("ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v==")}) {
    SCOPED_TRACE(bad);
    Result<SecretsKey> k = SecretsKey::Parse(bad);
    ASSERT_FALSE(k.has_value());
    EXPECT_EQ(k.error().code(), Status::Code::kInvalidArgument);
    if (!bad.empty()) {
      EXPECT_EQ(k.error().message().find(bad), std::string::npos);
    }
  }
}

// Verifies a sealed value round-trips, carries the version byte, never the plaintext, uses a
// fresh nonce each time, and does not open with another key, another setting key or a flipped bit.
TEST(SettingSealTest, SealsAndOpens) {
  const std::string plain = R"({"platform":"slack","token":"xoxb-SECRET"})";
  Result<std::string> a = SealSetting(Key(),
                                      "credentials/acme\x1f"
                                      "bot",
                                      plain);
  Result<std::string> b = SealSetting(Key(),
                                      "credentials/acme\x1f"
                                      "bot",
                                      plain);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_TRUE(IsSealed(*a));
  EXPECT_FALSE(IsSealed(plain));
  EXPECT_EQ(a->size(), 1 + 12 + plain.size() + 16);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->find("SECRET"), std::string::npos);
  Result<std::string> opened = OpenSetting(Key(),
                                           "credentials/acme\x1f"
                                           "bot",
                                           *a);
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ(*opened, plain);

  SecretsKey other = Key("ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
  Result<std::string> wrong_key = OpenSetting(other,
                                              "credentials/acme\x1f"
                                              "bot",
                                              *a);
  ASSERT_FALSE(wrong_key.has_value());
  EXPECT_EQ(wrong_key.error().code(), Status::Code::kCorruption);
  EXPECT_NE(wrong_key.error().message().find("credentials/acme/bot"), std::string::npos);
  EXPECT_FALSE(OpenSetting(Key(),
                           "credentials/acme\x1f"
                           "evil",
                           *a)
                   .has_value());
  std::string flipped = *a;
  flipped[20] ^= 1;
  EXPECT_FALSE(OpenSetting(Key(),
                           "credentials/acme\x1f"
                           "bot",
                           flipped)
                   .has_value());
  for (std::string hostile : {std::string(), std::string("\x01"), std::string(28, '\x01'),
                              std::string("\x02") + a->substr(1)}) {
    EXPECT_FALSE(OpenSetting(Key(),
                             "credentials/acme\x1f"
                             "bot",
                             hostile)
                     .has_value());
  }
}

// Verifies the store seals credentials/ and api_keys/ settings on disk (no plaintext byte in any
// file), reads them back opened, and leaves other settings as they are.
TEST(SettingSealTest, StoreSealsSecretSettingsAtRest) {
  TempDir dir;
  StoreOptions options{.path = dir.Sub("store")};
  options.secrets_key = Key();
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    ASSERT_TRUE((*store)
                    ->PutSetting("credentials/acme\x1f"
                                 "bot",
                                 "xoxb-TOKENBYTES")
                    .ok());
    ASSERT_TRUE((*store)->PutSetting("api_keys/acme", "sha256:HASHBYTES").ok());
    ASSERT_TRUE((*store)->PutSetting("overrides/acme", "{}").ok());
    auto listed = (*store)->ListSettings("credentials/");
    ASSERT_TRUE(listed.has_value());
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].second, "xoxb-TOKENBYTES");
    ASSERT_TRUE((*store)->Close().ok());
  }
  const std::string bytes = AllFileBytes(options.path);
  EXPECT_EQ(bytes.find("TOKENBYTES"), std::string::npos);
  EXPECT_EQ(bytes.find("HASHBYTES"), std::string::npos);
  auto store = OpenRocksQueueStore(options, kT0);
  ASSERT_TRUE(store.has_value());
  auto keys = (*store)->ListSettings("api_keys/");
  ASSERT_TRUE(keys.has_value() && keys->size() == 1u);
  EXPECT_EQ((*keys)[0].second, "sha256:HASHBYTES");
}

// Verifies the migration: plaintext secret settings of an older store are sealed by the first
// open with a key, and their plaintext is gone from every file afterwards.
TEST(SettingSealTest, OpenSealsOlderPlaintextSettings) {
  TempDir dir;
  StoreOptions options{.path = dir.Sub("store")};
  {
    auto old = OpenRocksQueueStore(options, kT0);  // no key: an older build
    ASSERT_TRUE(old.has_value());
    ASSERT_TRUE((*old)
                    ->PutSetting("credentials/acme\x1f"
                                 "hook",
                                 "whsec_PLAINOLD")
                    .ok());
    ASSERT_TRUE((*old)->Close().ok());
  }
  ASSERT_NE(AllFileBytes(options.path).find("PLAINOLD"), std::string::npos);
  options.secrets_key = Key();
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    auto listed = (*store)->ListSettings("credentials/");
    ASSERT_TRUE(listed.has_value() && listed->size() == 1u);
    EXPECT_EQ((*listed)[0].second, "whsec_PLAINOLD");
    ASSERT_TRUE((*store)->Close().ok());
  }
  EXPECT_EQ(AllFileBytes(options.path).find("PLAINOLD"), std::string::npos);
}

// Verifies a wrong key is a typed start-up error naming the setting, and that nothing changed.
TEST(SettingSealTest, WrongKeyIsATypedOpenError) {
  TempDir dir;
  StoreOptions options{.path = dir.Sub("store")};
  options.secrets_key = Key();
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value());
    ASSERT_TRUE((*store)
                    ->PutSetting("credentials/acme\x1f"
                                 "bot",
                                 "xoxb-1")
                    .ok());
    ASSERT_TRUE((*store)->Close().ok());
  }
  options.secrets_key = Key("ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
  auto wrong = OpenRocksQueueStore(options, kT0);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), Status::Code::kCorruption);
  EXPECT_NE(wrong.error().message().find("setting credentials/acme/bot"), std::string::npos)
      << wrong.error().message();
  options.secrets_key = Key();
  EXPECT_TRUE(OpenRocksQueueStore(options, kT0).has_value());
}

// Verifies the store directory is 0700 and every file in it 0600, also for an existing
// directory and a umask that would allow more.
TEST(SettingSealTest, StoreDirectoryAndFilesAreOwnerOnly) {
  TempDir dir;
  const mode_t old = ::umask(022);
  fs::create_directories(dir.Sub("store"));
  fs::permissions(dir.Sub("store"), fs::perms::all, fs::perm_options::replace);
  StoreOptions options{.path = dir.Sub("store")};
  options.secrets_key = Key();
  {
    auto store = OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    ASSERT_TRUE((*store)
                    ->PutSetting("credentials/a\x1f"
                                 "b",
                                 "x")
                    .ok());
    ASSERT_TRUE((*store)->Close().ok());
  }
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(options.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(options.path)) {
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    if (S_ISREG(st.st_mode)) {
      ++files;
      EXPECT_EQ(st.st_mode & 077, 0u) << e.path();
    }
  }
  EXPECT_GT(files, 3u);
}

// Verifies the key's sources in order, and that a generated key file is 0600 and read back.
TEST(SecretsKeyTest, LoadsOrCreatesTheKey) {
  TempDir dir;
  const std::string data = dir.Sub("data");
  auto generated = LoadOrCreateSecretsKey("", "", data);
  ASSERT_TRUE(generated.has_value()) << generated.error().ToString();
  EXPECT_EQ(generated->source, SecretsKeySource::kGenerated);
  struct stat st {};
  ASSERT_EQ(::stat(generated->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = LoadOrCreateSecretsKey("", "", data);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->source, SecretsKeySource::kDataDirFile);
  EXPECT_EQ(again->key.Hex(), generated->key.Hex());
  auto env = LoadOrCreateSecretsKey("", std::string(kHexKey), data);
  ASSERT_TRUE(env.has_value() && env->source == SecretsKeySource::kEnv);
  EXPECT_EQ(env->key.Hex(), kHexKey);
  { std::ofstream(dir.Sub("key")) << "not a key\n"; }
  auto bad = LoadOrCreateSecretsKey(dir.Sub("key"), std::string(kHexKey), data);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(bad.error().message().find(dir.Sub("key")), std::string::npos);
  EXPECT_EQ(bad.error().message().find("not a key"), std::string::npos);
  auto missing = LoadOrCreateSecretsKey(dir.Sub("nope"), "", data);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), Status::Code::kNotFound);
  auto bad_env = LoadOrCreateSecretsKey("", "short", data);
  ASSERT_FALSE(bad_env.has_value());
  EXPECT_NE(bad_env.error().message().find("RELAY_EGRESS_SECRETS_KEY"), std::string::npos);
  // A store opens in a directory holding only the generated key.
  StoreOptions options{.path = data};
  options.secrets_key = generated->key;
  EXPECT_TRUE(OpenRocksQueueStore(options, kT0).has_value());
}

}  // namespace
}  // namespace egress::storage
