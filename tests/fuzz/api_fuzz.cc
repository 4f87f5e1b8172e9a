// libFuzzer target for the HTTP API: method, target, headers and body in, the router's answer
// checked (tests/fuzz/api_fuzz_harness.h has the input layout and what counts as a finding).
//
// Built only in the clang configuration of build-fuzz/ (EGRESS_SANITIZE=fuzzer: every library
// instrumented for coverage, AddressSanitizer and UndefinedBehaviorSanitizer). `./dev fuzz api
// [seconds]` (also a step of `./dev test`) builds and runs it with tests/fuzz/api.dict over
// tests/fuzz/api_seeds/ (one request per route) and build-fuzz/api-corpus/. A crash, a sanitizer
// report or a finding aborts and leaves the input in build-fuzz/crash-<sha1>; replay it with
//   build-fuzz/api_fuzz build-fuzz/crash-<sha1>
// The seeds also run through the same harness in the integration tests (ApiFuzzSeedsTest).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/fuzz/api_fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Lives as long as the process: libFuzzer exits without returning here.
  static auto* harness = new egress::service::ApiFuzzHarness();
  const std::string finding = harness->RunOnce(data, size);
  if (!finding.empty()) {
    std::fprintf(stderr, "api fuzz finding: %s\n", finding.c_str());
    std::abort();
  }
  return 0;
}
