#include "adapters/header_number.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// Verifies which header values read as numbers and which are garbage.
TEST(HeaderNumberTest, ParsesLenientDecimals) {
  struct Case {
    std::string text;
    std::optional<double> want;
  };
  const Case cases[] = {
      {"65", 65},
      {"64.57", 64.57},
      {" 7\t", 7},
      {"-3", -3},
      {"+2", 2},
      {"1e3", 1000},
      {".5", 0.5},
      {"0", 0},
      {"", std::nullopt},
      {"   ", std::nullopt},
      {"abc", std::nullopt},
      {"12abc", std::nullopt},
      {"0x10", std::nullopt},
      {"inf", std::nullopt},
      {"nan", std::nullopt},
      {"1e400", std::nullopt},
      {"1, 2", std::nullopt},
      {"+-1", std::nullopt},
      {"++1", std::nullopt},
      {"+", std::nullopt},
      {"1 2", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseHeaderNumber(c.text), c.want);
  }
}

}  // namespace
}  // namespace egress::adapters
