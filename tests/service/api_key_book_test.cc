#include "dispatcher/service/api_key_book.h"

#include <gtest/gtest.h>

#include "adapters/api_key.h"

namespace egress::service {
namespace {

using adapters::ApiKeyDigest;

// Verifies a key finds its tenant, a replaced list drops the old keys, and a key of another
// tenant is refused without changing anything.
TEST(ApiKeyBookTest, ReplaceFindAndConflicts) {
  ApiKeyBook book;
  const std::string a1 = ApiKeyDigest("a-key-one-0123456789");
  const std::string a2 = ApiKeyDigest("a-key-two-0123456789");
  const std::string b1 = ApiKeyDigest("b-key-one-0123456789");
  ASSERT_TRUE(book.Replace("acme", {a1}).ok());
  ASSERT_TRUE(book.Replace("globex", {b1}).ok());
  EXPECT_EQ(book.TenantOf(a1), "acme");
  EXPECT_EQ(book.TenantOf(b1), "globex");
  EXPECT_EQ(book.TenantOf(ApiKeyDigest("nobody-0123456789")), std::nullopt);
  EXPECT_EQ(book.TenantOf(""), std::nullopt);

  ASSERT_TRUE(book.Replace("acme", {a2, a2}).ok());
  EXPECT_EQ(book.TenantOf(a1), std::nullopt);
  EXPECT_EQ(book.TenantOf(a2), "acme");
  EXPECT_EQ(book.CountOf("acme"), 1u);

  Status taken = book.Replace("acme", {a1, b1});
  EXPECT_EQ(taken.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(book.TenantOf(a2), "acme");
  EXPECT_EQ(book.TenantOf(b1), "globex");
  EXPECT_EQ(book.TenantOf(a1), std::nullopt);

  ASSERT_TRUE(book.Replace("acme", {}).ok());
  EXPECT_EQ(book.TenantOf(a2), std::nullopt);
  EXPECT_EQ(book.size(), 1u);
}

// Verifies both entry forms read to one digest, and that every refusal hides the entry.
TEST(ApiKeyBookTest, EntriesParseWithoutEchoing) {
  const std::string key = "k3y-with-visible-ascii!~";
  auto plain = adapters::ParseApiKeyEntry(key);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(*plain, ApiKeyDigest(key));
  auto hashed = adapters::ParseApiKeyEntry(adapters::ApiKeyDigestText(*plain));
  ASSERT_TRUE(hashed.has_value());
  EXPECT_EQ(*hashed, *plain);
  for (std::string bad : {std::string(), std::string("short-secret"), std::string(257, 'x'),
                          std::string("secret with space!!"), std::string("secret\ttab-0123456789"),
                          std::string("secret-\xc3\xa9-0123456789"), std::string("sha256:secret"),
                          "sha256:" + std::string(64, 'g')}) {
    auto r = adapters::ParseApiKeyEntry(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().message().find("secret"), std::string::npos) << r.error().message();
  }
}

// Verifies that ReplaceAll puts exactly the given tenants' keys in force (a tenant left out has
// none, a key may move from one tenant to another in one call), and that a key two tenants share
// is refused naming both tenants, with nothing changed.
TEST(ApiKeyBookTest, ReplaceAllReplacesTheWholeBook) {
  ApiKeyBook book;
  const std::string a1 = ApiKeyDigest("a-key-one-0123456789");
  const std::string a2 = ApiKeyDigest("a-key-two-0123456789");
  const std::string b1 = ApiKeyDigest("b-key-one-0123456789");
  ASSERT_TRUE(book.Replace("acme", {a1}).ok());
  ASSERT_TRUE(book.Replace("globex", {b1}).ok());
  ASSERT_TRUE(book.Replace("initech", {a2}).ok());

  // a2 moves from initech to acme, which loses a1; globex is left out: no keys.
  ASSERT_TRUE(book.ReplaceAll({{"acme", {a2, a2}}, {"initech", {}}}).ok());
  EXPECT_EQ(book.TenantOf(a2), "acme");
  EXPECT_EQ(book.TenantOf(a1), std::nullopt);
  EXPECT_EQ(book.TenantOf(b1), std::nullopt);
  EXPECT_EQ(book.DigestsOf("acme"), std::vector<std::string>{a2});
  EXPECT_EQ(book.CountOf("initech"), 0u);
  EXPECT_EQ(book.size(), 1u);

  Status shared = book.ReplaceAll({{"acme", {a1}}, {"globex", {b1, a1}}});
  EXPECT_EQ(shared.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(shared.message().find("acme"), std::string::npos) << shared.message();
  EXPECT_NE(shared.message().find("globex"), std::string::npos) << shared.message();
  EXPECT_EQ(shared.message().find(a1), std::string::npos);
  EXPECT_EQ(book.TenantOf(a2), "acme");
  EXPECT_EQ(book.TenantOf(a1), std::nullopt);
  EXPECT_EQ(book.size(), 1u);
}

}  // namespace
}  // namespace egress::service
