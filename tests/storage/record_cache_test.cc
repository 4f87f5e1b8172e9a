#include "storage/record_cache.h"

#include <string>

#include <gtest/gtest.h>

namespace egress::storage {
namespace {

using Changes = std::vector<std::pair<std::string, std::optional<std::string>>>;

// What an entry of short strings (held inside the strings) takes: the hash node and the
// allocator's header. A string longer than 15 bytes adds its block: capacity + 1 + 16.
constexpr size_t kEntry = 8 + 2 * 32 + 8 + 16;

// Verifies that a write's changes replace and drop records, and the count of heap taken follows.
TEST(RecordCacheTest, UpdateReplacesAndDrops) {
  RecordCache cache(1000);
  cache.Update(Changes{{"a", "one"}, {"b", "two"}});
  EXPECT_EQ(cache.Find("a"), "one");
  cache.Update(Changes{{"a", "uno"}, {"b", std::nullopt}});
  EXPECT_EQ(cache.Find("a"), "uno");
  EXPECT_FALSE(cache.Find("b").has_value());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), kEntry);
}

// Verifies that the cap is on the heap the entries take, not on their bytes: a record's block
// counts as allocated, an encoder's over-reserve is given back before it is cached, and a long
// id counts its block too. 64 MiB of record bytes had held about 150 MiB.
TEST(RecordCacheTest, CountsTheHeapEntriesTake) {
  RecordCache cache(10'000);
  std::string record(100, 'r');
  record.reserve(1000);
  const std::string id(26, 'i');
  cache.Update(Changes{{id, std::move(record)}});
  EXPECT_EQ(cache.Find(id), std::string(100, 'r'));
  EXPECT_EQ(cache.bytes(), kEntry + (100 + 1 + 16) + (26 + 1 + 16));
  cache.Update(Changes{{id, std::nullopt}});
  EXPECT_EQ(cache.bytes(), 0u);
}

// Verifies that a full cache takes nothing more, keeps what it has, and takes again once
// records leave; a replacement that no longer fits drops the old version (never stale).
TEST(RecordCacheTest, FullCacheKeepsTheOldest) {
  RecordCache cache(2 * kEntry);
  cache.Update(Changes{{"a", "1234"}, {"b", "1234"}, {"c", "1234"}});
  EXPECT_TRUE(cache.Find("a") && cache.Find("b"));
  EXPECT_FALSE(cache.Find("c").has_value());
  cache.Update(Changes{{"a", std::nullopt}, {"c", "1234"}});
  EXPECT_EQ(cache.Find("c"), "1234");
  cache.Update(Changes{{"b", std::string(100, 'x')}});
  EXPECT_FALSE(cache.Find("b").has_value());
  RecordCache off(0);
  off.Update(Changes{{"a", "1"}});
  EXPECT_EQ(off.size(), 0u);
}

}  // namespace
}  // namespace egress::storage
