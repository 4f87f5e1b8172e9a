// libFuzzer target for the shared rate-limit header parser (adapters/rate_limit_headers.h).
//
// Not part of the CMake build, which uses GCC. The unit test RateLimitHeadersFuzzTest
// (rate_limit_headers_fuzz_test.cc) runs the same FuzzRateLimitHeadersOnce over a few hundred
// thousand seeded pseudo-random and mutated inputs on every build, without clang.
//
// The real fuzzer, from the repository root (Debian 12: clang 14 ships libFuzzer):
//   mkdir -p build-fuzz/corpus
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. \
//     tests/fuzz/rate_limit_headers_fuzz.cc adapters/rate_limit_headers.cc \
//     adapters/header_list.cc adapters/header_number.cc adapters/http_date.cc \
//     adapters/http_header.cc -o build-fuzz/rate_limit_headers_fuzz
//   build-fuzz/rate_limit_headers_fuzz -dict=tests/fuzz/rate_limit_headers.dict \
//     -max_total_time=60 build-fuzz/corpus
// A crash or a broken invariant aborts and leaves the input in ./crash-<sha1>; replay it with
//   build-fuzz/rate_limit_headers_fuzz ./crash-<sha1>

#include "tests/fuzz/rate_limit_headers_fuzz.h"

#include <cstddef>
#include <cstdint>

#include "dispatcher/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  EGRESS_CHECK(egress::adapters::FuzzRateLimitHeadersOnce(data, size));
  return 0;
}
