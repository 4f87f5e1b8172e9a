#include "dispatcher/pacing/packed_id.h"

#include <string>

#include <gtest/gtest.h>

namespace egress::pacing {
namespace {

std::string RoundTrip(const std::string& id, IdForm expected) {
  PackedId packed;
  EXPECT_EQ(PackedId::Pack(id, packed), expected) << id;
  return packed.Unpack(expected);
}

// Verifies that ULID-shaped ids pack into 16 bytes and come back exactly.
TEST(PackedIdTest, UlidRoundTrips) {
  for (const std::string id : {"01J00000000000000000009999", "01ARZ3NDEKTSV4RRFFQ69G5FAV",
                               "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", "00000000000000000000000000"}) {
    ASSERT_EQ(id.size(), 26u);
    EXPECT_EQ(RoundTrip(id, IdForm::kUlid), id);
  }
}

// Verifies that non-canonical 26-character ids (lower case, excluded letters, overflow) are
// not packed as ULIDs, so unpacking never changes an id.
TEST(PackedIdTest, NonCanonicalIsNotUlid) {
  PackedId packed;
  EXPECT_EQ(PackedId::Pack("01arz3ndektsv4rrffq69g5fav", packed), IdForm::kLong);
  EXPECT_EQ(PackedId::Pack("01ARZ3NDEKTSV4RRFFQ69G5FAU", packed), IdForm::kLong);
  EXPECT_EQ(PackedId::Pack("01ARZ3NDEKTSV4RRFFQ69G5FAI", packed), IdForm::kLong);
  EXPECT_EQ(PackedId::Pack("8ZZZZZZZZZZZZZZZZZZZZZZZZZ", packed), IdForm::kLong);
}

// Verifies that short ids are held verbatim and long ones are left to the owner.
TEST(PackedIdTest, ShortInlineLongNot) {
  EXPECT_EQ(RoundTrip("", IdForm::kInline), "");
  EXPECT_EQ(RoundTrip("d1", IdForm::kInline), "d1");
  EXPECT_EQ(RoundTrip("exactly-15-byte", IdForm::kInline), "exactly-15-byte");
  PackedId packed;
  EXPECT_EQ(PackedId::Pack("sixteen-byte-id!", packed), IdForm::kLong);
  EXPECT_EQ(packed.Unpack(IdForm::kLong), "");
}

}  // namespace
}  // namespace egress::pacing
