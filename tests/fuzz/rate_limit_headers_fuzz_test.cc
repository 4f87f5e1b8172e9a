#include "tests/fuzz/rate_limit_headers_fuzz.h"

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace egress::adapters {
namespace {

// Receipt time 2026-01-01T00:00:00Z as the fuzz input's bytes 1-4, little-endian.
const std::string kPrefix("\x09\x80\xb8\x55\x69", 5);

const char* const kSeeds[] = {
    "Retry-After: 120\nX-RateLimit-Remaining: 0\n",
    "Retry-After: Thu, 01 Jan 2026 00:01:30 GMT",
    "Retry-After: Thursday, 01-Jan-26 00:02:00 GMT\nRetry-After: Thu Jan  1 00:00:45 2026",
    "X-RateLimit-Limit: 5\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 1767225664.570\n"
    "X-RateLimit-Reset-After: 64.57\nX-RateLimit-Bucket: abcd1234\nX-RateLimit-Scope: user",
    "X-RateLimit-Global: true\nX-RateLimit-Scope: global\nRetry-After: 2",
    "x-ratelimit-limit: 5000\nx-ratelimit-remaining: 0\nx-ratelimit-reset: 1767229200\n"
    "x-ratelimit-resource: core",
    "RateLimit: \"default\";r=50;t=30\nRateLimit-Policy: \"default\";q=100;w=60",
    "RateLimit-Policy: \"minute\";q=120;w=60, \"day\";q=5000;w=86400\n"
    "RateLimit: \"minute\";r=17;t=42, \"day\";r=3000;t=40000",
    "RateLimit: limit=100, remaining=50, reset=30\nRateLimit-Policy: 100;w=60",
    "RateLimit-Limit: 100, 100;w=60\nRateLimit-Remaining: 42\nRateLimit-Reset: 17",
    "RateLimit-Policy: \"b\";q=1;qu=\"content-bytes\";w=60\nRateLimit: \"b\";r=0;t=5",
};

const char* const kTokens[] = {
    "-",   "1e308", "99999999999999999999", "\"", "\\",  ";",   ",", "=", ":",  "\n", " ",
    "GMT", "Nov",   "1767225600123",        "0",  "nan", "inf", "(", ")", "r=", "t=", "q=",
};

// One random edit of `s`: flip, insert a token, erase a range, duplicate a range, or truncate.
void Mutate(std::string& s, std::mt19937& rng) {
  auto pos = [&](size_t n) { return n == 0 ? size_t{0} : size_t(rng() % (n + 1)); };
  switch (rng() % 5) {
    case 0:
      if (!s.empty()) {
        s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
      }
      break;
    case 1:
      s.insert(pos(s.size()), kTokens[rng() % std::size(kTokens)]);
      break;
    case 2: {
      size_t at = pos(s.size());
      s.erase(at, rng() % 8);
      break;
    }
    case 3: {
      size_t at = pos(s.size());
      std::string piece = s.substr(at, rng() % 16);
      s.insert(pos(s.size()), piece);
      break;
    }
    default:
      s.resize(pos(s.size()));
  }
}

std::string RandomBytes(std::mt19937& rng) {
  std::string s(rng() % 64, '\0');
  for (char& c : s) {
    c = static_cast<char>(rng() % 256);
  }
  return s;
}

// Verifies the fuzz target's invariants over 300,000 seeded inputs: the seeds, random bytes
// and mutated seeds. Deterministic (fixed seed) and about a second in a release build.
TEST(RateLimitHeadersFuzzTest, SurvivesMutatedInputs) {
  std::mt19937 rng(20260101);
  constexpr int kIterations = 300'000;
  int failures = 0;
  for (int i = 0; i < kIterations && failures < 5; ++i) {
    std::string input;
    if (i < static_cast<int>(std::size(kSeeds))) {
      input = kPrefix + kSeeds[i];
    } else if (i % 8 == 0) {
      input = RandomBytes(rng);
    } else {
      input = kPrefix + kSeeds[rng() % std::size(kSeeds)];
      for (int edits = 1 + static_cast<int>(rng() % 8); edits > 0; --edits) {
        Mutate(input, rng);
      }
    }
    bool ok =
        FuzzRateLimitHeadersOnce(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "invariant broken for input: " << testing::PrintToString(input);
    }
  }
}

}  // namespace
}  // namespace egress::adapters
