// The API fuzzer's committed seeds through its harness in the ordinary build (and under the
// sanitizers of `./dev test --asan`), so that a seed that stops being a good request, or a
// route that starts answering one badly, fails here and not only while fuzzing.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fuzz/api_fuzz_harness.h"
#include "tests/support/child_process.h"

namespace egress::service {
namespace {

// Verifies that every seed of tests/fuzz/api_seeds/ reaches the router, is answered without a
// finding, and lands on a route (never the router's own 404 or 405): the seeds cover the routes.
TEST(ApiFuzzSeedsTest, EverySeedIsAnsweredByItsRoute) {
  std::vector<std::filesystem::path> seeds;
  for (const auto& entry :
       std::filesystem::directory_iterator(SourceDir() + "/tests/fuzz/api_seeds")) {
    seeds.push_back(entry.path());
  }
  std::sort(seeds.begin(), seeds.end());
  ASSERT_GE(seeds.size(), 20u);
  ApiFuzzHarness harness;
  for (const auto& path : seeds) {
    std::ifstream in(path, std::ios::binary);
    const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const uint64_t before = harness.routed();
    EXPECT_EQ(harness.RunOnce(reinterpret_cast<const uint8_t*>(input.data()), input.size()), "")
        << path.filename();
    EXPECT_GT(harness.routed(), before) << path.filename() << " never reached the router";
    EXPECT_EQ(harness.last_body().find("no such endpoint"), std::string::npos)
        << path.filename() << ": " << harness.last_body();
    EXPECT_EQ(harness.last_body().find("method_not_allowed"), std::string::npos)
        << path.filename() << ": " << harness.last_body();
  }
}

// Verifies that the harness reports what it must: an answer that is fine passes, and the
// framing's parts (method byte, target, headers, body, several requests) reach the router.
TEST(ApiFuzzSeedsTest, HarnessFramesRequests) {
  ApiFuzzHarness harness;
  const std::string two =
      std::string("0/healthz\n\x1e\n") +
      "2/api/admin/tenants/acme/rate_limits\nX-Admin-Token: " + kApiFuzzAdminToken +
      "\n\n{\"rate_limits\":{}}";
  EXPECT_EQ(harness.RunOnce(reinterpret_cast<const uint8_t*>(two.data()), two.size()), "");
  EXPECT_EQ(harness.routed(), 2u);
  EXPECT_EQ(harness.last_status(), 200u) << harness.last_body();
  EXPECT_NE(harness.last_body().find("\"tenant\":\"acme\""), std::string::npos)
      << harness.last_body();
  // A configured secret that a client stored itself may come back later (the fuzzer learns the
  // secrets from the harness's own comparisons): not a finding.
  const std::string stored =
      std::string("1/v1/deliveries\n\n") +
      R"({"tenant":"acme","platform":"webhook","destination":"https://hooks.example.com/x",)" +
      R"("credential":"hooks","payload":{},"idempotency_key":")" + kApiFuzzSlackToken + "\"}";
  EXPECT_EQ(harness.RunOnce(reinterpret_cast<const uint8_t*>(stored.data()), stored.size()), "");
  EXPECT_EQ(harness.last_status(), 202u) << harness.last_body();
  const std::string list = "0/v1/deliveries\n";
  EXPECT_EQ(harness.RunOnce(reinterpret_cast<const uint8_t*>(list.data()), list.size()), "");
  EXPECT_NE(harness.last_body().find(kApiFuzzSlackToken), std::string::npos) << harness.last_body();
  // A target the HTTP parser refuses (a space in it) never reaches the router.
  const std::string bad = "0/a b\n";
  EXPECT_EQ(harness.RunOnce(reinterpret_cast<const uint8_t*>(bad.data()), bad.size()), "");
  EXPECT_EQ(harness.routed(), 4u);
}

}  // namespace
}  // namespace egress::service
