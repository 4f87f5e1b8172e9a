#include "dispatcher/base/status.h"

#include <gtest/gtest.h>

#include "dispatcher/base/result.h"

namespace egress {
namespace {

// Verifies that a Result converts from a non-OK Status and reports it back.
TEST(ResultTest, HoldsErrorFromStatus) {
  Result<int> r = Status::NotFound("delivery x");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Status::Code::kNotFound);
  EXPECT_EQ(r.status().ToString(), "NotFound: delivery x");
}

// Verifies that a Result holding a value reports OK.
TEST(ResultTest, HoldsValue) {
  Result<int> r = 7;
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 7);
  EXPECT_TRUE(r.status().ok());
}

}  // namespace
}  // namespace egress
