#include "storage/record_cache.h"

#include <gtest/gtest.h>

namespace egress::storage {
namespace {

using Changes = std::vector<std::pair<std::string, std::optional<std::string>>>;

// Verifies that a write's changes replace and drop records, and the byte count follows.
TEST(RecordCacheTest, UpdateReplacesAndDrops) {
  RecordCache cache(1000);
  cache.Update(Changes{{"a", "one"}, {"b", "two"}});
  EXPECT_EQ(cache.Find("a"), "one");
  cache.Update(Changes{{"a", "uno"}, {"b", std::nullopt}});
  EXPECT_EQ(cache.Find("a"), "uno");
  EXPECT_FALSE(cache.Find("b").has_value());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), 4u);  // "a" + "uno"
}

// Verifies that a full cache takes nothing more, keeps what it has, and takes again once
// records leave; a replacement that no longer fits drops the old version (never stale).
TEST(RecordCacheTest, FullCacheKeepsTheOldest) {
  RecordCache cache(10);
  cache.Update(Changes{{"a", "1234"}, {"b", "1234"}, {"c", "1234"}});
  EXPECT_TRUE(cache.Find("a") && cache.Find("b"));
  EXPECT_FALSE(cache.Find("c").has_value());
  cache.Update(Changes{{"a", std::nullopt}, {"c", "1234"}});
  EXPECT_EQ(cache.Find("c"), "1234");
  cache.Update(Changes{{"b", "123456789"}});
  EXPECT_FALSE(cache.Find("b").has_value());
  RecordCache off(0);
  off.Update(Changes{{"a", "1"}});
  EXPECT_EQ(off.size(), 0u);
}

}  // namespace
}  // namespace egress::storage
