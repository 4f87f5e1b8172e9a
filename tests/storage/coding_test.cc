#include "storage/coding.h"

#include <limits>

#include <gtest/gtest.h>

#include "storage/index_keys.h"

namespace egress::storage {
namespace {

// Verifies that varints round-trip at every length boundary.
TEST(CodingTest, VarintRoundTrips) {
  for (uint64_t v :
       std::initializer_list<uint64_t>{0ULL, 1ULL, 127ULL, 128ULL, 16383ULL, 16384ULL,
                                       (1ULL << 35) + 7, std::numeric_limits<uint64_t>::max()}) {
    std::string buf;
    PutVarint64(buf, v);
    std::string_view in = buf;
    uint64_t out = 0;
    ASSERT_TRUE(GetVarint64(in, out));
    EXPECT_EQ(out, v);
    EXPECT_TRUE(in.empty());
  }
}

// Verifies that truncated varints and lengths are refused, not over-read.
TEST(CodingTest, RefusesTruncatedInput) {
  std::string buf;
  PutVarint64(buf, 1ULL << 40);
  std::string_view in(buf.data(), buf.size() - 1);
  uint64_t v = 0;
  EXPECT_FALSE(GetVarint64(in, v));
  std::string lp;
  PutLengthPrefixed(lp, "hello");
  std::string_view lp_in(lp.data(), lp.size() - 1);
  std::string_view bytes;
  EXPECT_FALSE(GetLengthPrefixed(lp_in, bytes));
}

// Verifies that zig-zag keeps negatives round-tripping.
TEST(CodingTest, ZigZagRoundTrips) {
  for (int64_t v :
       std::initializer_list<int64_t>{0LL, -1LL, 1LL, -1000LL, std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  }
}

// Verifies that big-endian keys sort in numeric order, so the due index is schedule order.
TEST(IndexKeysTest, DueKeysSortByTimeThenId) {
  EXPECT_LT(DueKey(255, "B"), DueKey(256, "A"));
  EXPECT_LT(DueKey(1'000, "A"), DueKey(1'000, "B"));
  EXPECT_LT(DueKey(1'767'225'600'000, "Z"), DueKey(1'767'225'600'001, "0"));
  int64_t ms = 0;
  std::string_view id;
  ASSERT_TRUE(ParseDueKey(DueKey(1'767'225'600'123, "01ABC"), ms, id));
  EXPECT_EQ(ms, 1'767'225'600'123);
  EXPECT_EQ(id, "01ABC");
}

// Verifies that the retention index keeps each class (a state, or idempotency keys) apart and
// in finish-time order, that a class's bound for time T sits after every entry older than T and
// before every entry of T or later, and that keys parse back.
TEST(IndexKeysTest, DoneKeysGroupByClassThenTime) {
  constexpr int64_t kT = 1'767'225'600'000;
  EXPECT_LT(DoneKey(DeliveryState::kDelivered, kT + 1, "A"), DoneKey(DeliveryState::kDead, 0, "A"));
  EXPECT_LT(DoneKey(DeliveryState::kCancelled, kT + 1, "A"), IdemExpiryKey(0, "A"));
  EXPECT_LT(DoneKey(DeliveryState::kDead, 255, "Z"), DoneKey(DeliveryState::kDead, 256, "0"));
  EXPECT_LT(DoneKey(DeliveryState::kDead, kT - 1, "ZZZZ"),
            DoneBound(static_cast<char>(DeliveryState::kDead), kT));
  EXPECT_LE(DoneBound(static_cast<char>(DeliveryState::kDead), kT),
            DoneKey(DeliveryState::kDead, kT, "0"));
  EXPECT_LT(IdemExpiryKey(kT - 1, "ZZZZ"), DoneBound(kIdemExpiryTag, kT));
  // Every tag sorts after the first byte of a format-3 key (be64 of a time before 2^56 ms),
  // which the migration to format 4 removes as the range [0x00, 0x04).
  EXPECT_LT(DueKey(kT, "Z"), std::string("\x04"));
  EXPECT_GE(DoneKey(DeliveryState::kDelivered, 0, "0"), std::string("\x04"));
  char tag = 0;
  int64_t ms = 0;
  std::string_view id;
  ASSERT_TRUE(ParseDoneKey(IdemExpiryKey(kT + 7, "01ABC"), tag, ms, id));
  EXPECT_EQ(tag, kIdemExpiryTag);
  EXPECT_EQ(ms, kT + 7);
  EXPECT_EQ(id, "01ABC");
  ASSERT_TRUE(ParseDoneKey(DoneKey(DeliveryState::kCancelled, kT, "01X"), tag, ms, id));
  EXPECT_EQ(tag, static_cast<char>(DeliveryState::kCancelled));
  EXPECT_FALSE(ParseDoneKey(std::string("\x04short"), tag, ms, id));
}

// Verifies that a destination's keys group together and sort by id, and that the upper bound
// of one destination is past all its keys but before a longer destination sharing its prefix.
TEST(IndexKeysTest, DestinationKeysGroupAndOrder) {
  const std::string a = DestIndexKey(
      "slack\x1ft\x1f"
      "c\x1f"
      "C1",
      "01B");
  const std::string b = DestIndexKey(
      "slack\x1ft\x1f"
      "c\x1f"
      "C1",
      "01C");
  const std::string longer = DestIndexKey(
      "slack\x1ft\x1f"
      "c\x1f"
      "C10",
      "01A");
  EXPECT_LT(a, b);
  EXPECT_LT(b, longer);
  EXPECT_LT(b, DestUpperBound("slack\x1ft\x1f"
                              "c\x1f"
                              "C1"));
  EXPECT_LT(DestUpperBound("slack\x1ft\x1f"
                           "c\x1f"
                           "C1"),
            longer);
  EXPECT_EQ(DestOfIndexKey(a),
            "slack\x1ft\x1f"
            "c\x1f"
            "C1");
  EXPECT_EQ(IdOfDestIndexKey(a), "01B");
}

// Verifies that idempotency keys of different tenants cannot collide by concatenation.
TEST(IndexKeysTest, IdempotencyKeysSeparateTenants) {
  EXPECT_NE(IdemKey("ab", "c"), IdemKey("a", "bc"));
}

}  // namespace
}  // namespace egress::storage
