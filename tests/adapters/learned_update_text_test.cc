#include "adapters/learned_update_text.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/learned_updates.h"

namespace egress::adapters {
namespace {

using pacing::LearnedUpdate;

// Verifies the shares' text both ways, and that every other shape is refused by name.
TEST(LearnedUpdateTextTest, EncodesAndRefusesWhatIsNotAnUpdate) {
  LearnedUpdate adaptive = BudgetUpdate(0xfedcba9876543210ULL, 12);
  adaptive.adaptive = true;
  adaptive.probing = true;
  adaptive.hold = Millis(750);
  LearnedUpdate forget;
  forget.kind = LearnedUpdate::Kind::kForget;
  forget.key = 1;
  LearnedUpdate bucket;
  bucket.kind = LearnedUpdate::Kind::kDiscordBucket;
  bucket.key = 2;
  bucket.bucket = 0xffffffffffffffffULL;
  EXPECT_EQ(EncodeLearnedUpdate(adaptive), "b fedcba9876543210 12 1000 1 1 1 750");
  for (const LearnedUpdate& update : {adaptive, forget, bucket, BudgetUpdate(3, 1)}) {
    Result<LearnedUpdate> back = DecodeLearnedUpdate(EncodeLearnedUpdate(update));
    ASSERT_TRUE(back.has_value()) << EncodeLearnedUpdate(update);
    EXPECT_EQ(*back, update);
  }
  for (const char* hostile :
       {"", "b", "x 0000000000000001", "f 1", "f 0000000000000001 extra", "f 000000000000000g",
        "f -000000000000001", "b 0000000000000001 0 1000 1 0 0 0",
        "b 0000000000000001 1 1000 1 0 0 -1", "b 0000000000000001 1 1000 1 2 0 0",
        "b 0000000000000001 1 99999999999999999999 1 0 0 0", "b 0000000000000001 1 1000 1 0 0 0 0",
        "b 0000000000000001 1  1000 1 0 0", "b 0000000000000001 1 1000 1 0 0 600001",
        "d 0000000000000001", "b 0000000000000001 +1 1000 1 0 0 0"}) {
    EXPECT_FALSE(DecodeLearnedUpdate(hostile).has_value()) << "'" << hostile << "'";
  }
  EXPECT_FALSE(DecodeLearnedUpdate(std::string(200, 'f')).has_value());
}

// Verifies that a batch keeps the latest update per key in first-seen order, tells a bucket
// from a budget of the same key, drops a new key beyond its size, and starts empty once taken.
TEST(LearnedUpdateTextTest, BatchKeepsTheLatestPerKey) {
  LearnedUpdateBatch batch(2);
  LearnedUpdate bucket;
  bucket.kind = LearnedUpdate::Kind::kDiscordBucket;
  bucket.key = 1;
  bucket.bucket = 9;
  EXPECT_TRUE(batch.Keep(BudgetUpdate(1, 5)));
  EXPECT_TRUE(batch.Keep(bucket));
  EXPECT_TRUE(batch.Keep(BudgetUpdate(1, 7)));
  EXPECT_FALSE(batch.Keep(BudgetUpdate(2, 1)));
  std::vector<LearnedUpdate> taken = batch.Take();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0], BudgetUpdate(1, 7));
  EXPECT_EQ(taken[1], bucket);
  EXPECT_TRUE(batch.empty());
  EXPECT_TRUE(batch.Keep(BudgetUpdate(2, 1)));
  EXPECT_EQ(batch.size(), 1u);
}

}  // namespace
}  // namespace egress::adapters
