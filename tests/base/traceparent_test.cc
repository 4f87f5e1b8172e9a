// NormalizeTraceparent: W3C Trace Context traceparent, version 00, checked as hostile input.

#include "dispatcher/base/traceparent.h"

#include <gtest/gtest.h>

namespace egress {
namespace {

constexpr char kValid[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

// Verifies that a valid version 00 value is kept as it is.
TEST(TraceparentTest, KeepsAValidValue) {
  EXPECT_EQ(NormalizeTraceparent(kValid), kValid);
  EXPECT_EQ(NormalizeTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
}

// Verifies that a later version is read as version 00 when its first 55 characters are one.
TEST(TraceparentTest, ReadsALaterVersionAsVersion00) {
  EXPECT_EQ(NormalizeTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            kValid);
  EXPECT_EQ(NormalizeTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz"),
            kValid);
  EXPECT_EQ(NormalizeTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01xyz"),
            std::nullopt);
}

// Verifies that every malformed shape is refused, never read past its end.
TEST(TraceparentTest, RefusesMalformedValues) {
  for (std::string_view bad : {
           "", "00",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",    // short
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // 00 with a tail
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace-id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent-id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
           "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version not hex
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
           "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",   // misplaced dash
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",   // flags not hex
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7\n01",  // control byte
       }) {
    EXPECT_EQ(NormalizeTraceparent(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(NormalizeTraceparent(std::string(100'000, '0')), std::nullopt);
}

}  // namespace
}  // namespace egress
