#include "dispatcher/service/credential_book.h"

#include <gtest/gtest.h>

namespace egress::service {
namespace {

adapters::Credential Bot(const std::string& name, const std::string& token) {
  return adapters::Credential{.name = name, .platform = "slack", .token = token};
}

// Verifies that a registered credential goes over the config's of the same (tenant, name), that
// ReplaceRegistered drops a registered one that is no longer given (the config's is found again,
// one only registered is gone) and keeps every config credential, and that a config reload
// (PutAll) does not go over a registered one.
TEST(CredentialBookTest, RegisteredOverConfigAndReplacedAsAWhole) {
  CredentialBook book;
  book.Put("acme", Bot("bot", "xoxb-config"));
  book.Put("acme", Bot("other", "xoxb-other"));
  book.Register("acme", Bot("bot", "xoxb-registered"));
  book.Register("globex", Bot("late", "xoxb-late"));
  EXPECT_EQ(book.Find("acme", "bot")->token, "xoxb-registered");
  EXPECT_TRUE(book.HasTenant("globex"));

  book.PutAll({{"acme", Bot("bot", "xoxb-config-2")}});
  EXPECT_EQ(book.Find("acme", "bot")->token, "xoxb-registered");

  book.ReplaceRegistered({{"initech", Bot("new", "xoxb-new")}});
  EXPECT_EQ(book.Find("acme", "bot")->token, "xoxb-config-2");
  EXPECT_EQ(book.Find("acme", "other")->token, "xoxb-other");
  EXPECT_EQ(book.Find("globex", "late"), std::nullopt);
  EXPECT_FALSE(book.HasTenant("globex"));
  EXPECT_EQ(book.Find("initech", "new")->token, "xoxb-new");
  EXPECT_TRUE(book.HasTenant("initech"));

  book.ReplaceRegistered({});
  EXPECT_FALSE(book.HasTenant("initech"));
  EXPECT_TRUE(book.HasTenant("acme"));
}

}  // namespace
}  // namespace egress::service
