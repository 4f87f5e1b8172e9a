// libFuzzer target for the shared rate-limit header parser (adapters/rate_limit_headers.h).
//
// Built only in the clang configuration of build-fuzz/ (EGRESS_SANITIZE=fuzzer). The unit test
// RateLimitHeadersFuzzTest (rate_limit_headers_fuzz_test.cc) runs the same
// FuzzRateLimitHeadersOnce over a few hundred thousand seeded pseudo-random and mutated inputs on
// every build, without clang.
//
// The real fuzzer: `./dev fuzz [seconds]` (also a step of `./dev test`) builds it with clang 14
// and -fsanitize=fuzzer,address,undefined in build-fuzz/, then runs it with
// tests/fuzz/rate_limit_headers.dict over tests/fuzz/seeds/ (the table tests' header forms, in
// the input layout of rate_limit_headers_fuzz.h) and build-fuzz/corpus/. A crash or a broken
// invariant aborts and leaves the input in build-fuzz/crash-<sha1>; replay it with
//   build-fuzz/rate_limit_headers_fuzz build-fuzz/crash-<sha1>

#include "tests/fuzz/rate_limit_headers_fuzz.h"

#include <cstddef>
#include <cstdint>

#include "dispatcher/base/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  EGRESS_CHECK(egress::adapters::FuzzRateLimitHeadersOnce(data, size));
  return 0;
}
