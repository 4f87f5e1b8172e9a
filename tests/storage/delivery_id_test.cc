#include "storage/delivery_id.h"

#include <set>

#include <gtest/gtest.h>

namespace egress::storage {
namespace {

// Verifies that ids increase strictly even when the clock stalls or steps back.
TEST(DeliveryIdTest, StrictlyIncreasingThroughClockSteps) {
  DeliveryIdGenerator gen(42, "");
  std::string last;
  uint64_t last_sequence = 0;
  for (int64_t ms : {1000, 1000, 1000, 999, 500, 1001, 1001, 2000}) {
    std::string id = gen.Next(ms);
    EXPECT_TRUE(IsDeliveryId(id)) << id;
    EXPECT_GT(id, last);
    EXPECT_GT(DeliveryIdSequence(id), last_sequence);
    last = id;
    last_sequence = DeliveryIdSequence(id);
  }
}

// Verifies that a generator seeded with the newest stored id never goes below it.
TEST(DeliveryIdTest, RespectsFloorAfterRestart) {
  DeliveryIdGenerator first(1, "");
  const std::string newest = first.Next(5'000);
  DeliveryIdGenerator second(2, newest);
  EXPECT_GT(second.Next(4'000), newest);  // clock went back across the restart
  EXPECT_EQ(DeliveryIdMillis(second.Next(6'000)), 6'000);
}

// Verifies the id shape and that a burst in one millisecond stays unique.
TEST(DeliveryIdTest, UniqueWithinOneMillisecond) {
  DeliveryIdGenerator gen(7, "");
  std::set<std::string> seen;
  for (int i = 0; i < 70'000; ++i) {  // more than the 16-bit counter holds
    ASSERT_TRUE(seen.insert(gen.Next(1'767'225'600'000)).second);
  }
  uint64_t last_sequence = 0;
  for (const std::string& id : seen) {
    ASSERT_GT(DeliveryIdSequence(id), last_sequence);
    last_sequence = DeliveryIdSequence(id);
  }
  EXPECT_EQ(DeliveryIdMillis(*seen.begin()), 1'767'225'600'000);
  EXPECT_FALSE(IsDeliveryId("not-an-id"));
  EXPECT_FALSE(IsDeliveryId("ZZZZZZZZZZZZZZZZZZZZZZZZZZ"));  // over 128 bits
}

// Verifies that only Crockford base32 capitals decode: lower case, the letters the alphabet
// leaves out (I L O U) and bytes outside ASCII are refused wherever they stand.
TEST(DeliveryIdTest, RefusesCharactersOutsideTheAlphabet) {
  DeliveryIdGenerator gen(3, "");
  const std::string id = gen.Next(1'767'225'600'123);
  ASSERT_TRUE(IsDeliveryId(id));
  EXPECT_EQ(DeliveryIdMillis(id), 1'767'225'600'123);
  for (char bad : {'a', 'z', 'I', 'L', 'O', 'U', '-', '\0', static_cast<char>(0xC3)}) {
    for (size_t at : {size_t{0}, size_t{12}, size_t{25}}) {
      std::string changed = id;
      changed[at] = bad;
      EXPECT_FALSE(IsDeliveryId(changed)) << at << " " << static_cast<int>(bad);
      EXPECT_EQ(DeliveryIdSequence(changed), 0u);
      EXPECT_EQ(DeliveryIdMillis(changed), -1);
    }
  }
  EXPECT_TRUE(IsDeliveryId("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"));   // the largest 128-bit value
  EXPECT_FALSE(IsDeliveryId("80000000000000000000000000"));  // 129 bits
}

// Verifies that the floor of a millisecond sorts between the ids minted before it and at it.
TEST(DeliveryIdTest, FloorSeparatesMilliseconds) {
  DeliveryIdGenerator gen(7, "");
  const std::string before = gen.Next(1'999);
  const std::string at = gen.Next(2'000);
  EXPECT_LT(before, DeliveryIdFloor(2'000));
  EXPECT_LE(DeliveryIdFloor(2'000), at);
  EXPECT_EQ(DeliveryIdMillis(DeliveryIdFloor(2'000)), 2'000);
  EXPECT_EQ(DeliveryIdMillis(DeliveryIdFloor(-5)), 0);
  EXPECT_TRUE(IsDeliveryId(DeliveryIdFloor(int64_t{1} << 60)));  // clamped, still an id
}

}  // namespace
}  // namespace egress::storage
