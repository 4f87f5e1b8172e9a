#include "tests/simulator/hidden_limit.h"

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/simulator/sim_config.h"
#include "tests/simulator/sim_test_requests.h"
#include "tests/support/fake_clock.h"

namespace egress::sim {
namespace {

using std::chrono::milliseconds;

// Requests `limit` takes at `now`, up to 100.
int TakeAll(HiddenLimit& limit, SteadyTime now) {
  int taken = 0;
  while (taken < 100 && limit.TryTake(now)) {
    ++taken;
  }
  return taken;
}

// Verifies the three shapes of 10/s: a token bucket passes its burst and refills one per 100 ms
// up to it;
// a fixed window passes 10 at once and 10 again once its window has ended; a sliding log
// passes 10 in any second, so a request frees its place one second after it was taken.
TEST(HiddenLimitTest, EachShapeAdmitsWhatItShould) {
  FakeClock clock;
  HiddenLimit bucket({LimitShape::kTokenBucket, 10, 3, 1000}, clock.Now());
  HiddenLimit fixed({LimitShape::kFixedWindow, 10, 3, 1000}, clock.Now());
  HiddenLimit sliding({LimitShape::kSlidingLog, 10, 3, 1000}, clock.Now());
  EXPECT_EQ(TakeAll(bucket, clock.Now()), 3);
  EXPECT_EQ(TakeAll(fixed, clock.Now()), 10);
  clock.Advance(milliseconds(500));
  EXPECT_EQ(TakeAll(bucket, clock.Now()), 3) << "5 refilled, held to the burst";
  EXPECT_EQ(TakeAll(fixed, clock.Now()), 0);
  EXPECT_EQ(TakeAll(sliding, clock.Now()), 10);
  clock.Advance(milliseconds(500));
  EXPECT_EQ(TakeAll(fixed, clock.Now()), 10) << "a new window";
  EXPECT_EQ(TakeAll(sliding, clock.Now()), 0) << "the 10 taken half a second ago still count";
  clock.Advance(milliseconds(500));
  EXPECT_EQ(TakeAll(sliding, clock.Now()), 10);
}

// Verifies a rate of 0 is unlimited and that a window admits at least one request.
TEST(HiddenLimitTest, ZeroRateIsUnlimitedAndAWindowAdmitsOne) {
  FakeClock clock;
  HiddenLimit open({LimitShape::kSlidingLog, 0, 1, 1000}, clock.Now());
  EXPECT_EQ(TakeAll(open, clock.Now()), 100);
  EXPECT_EQ((HiddenLimitSpec{LimitShape::kFixedWindow, 0.5, 1, 1000}.WindowLimit()), 1);
  EXPECT_EQ((HiddenLimitSpec{LimitShape::kFixedWindow, 20, 1, 2000}.WindowLimit()), 40);
}

// Verifies the simulator's LINE keys: a shape it does not know, a burst or a window out of range
// and a latency out of range are errors naming the key.
TEST(HiddenLimitTest, LineShapeKeysAreChecked) {
  EXPECT_TRUE(ParseSimConfig(R"({"line": {"shape": "token_bucket", "burst": 5}})").has_value());
  EXPECT_TRUE(
      ParseSimConfig(R"({"latency_ms": 3, "latency_jitter_ms": 5, "seed": 7})").has_value());
  Result<SimConfig> bad = ParseSimConfig(R"({"line": {"shape": "leaky"}})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("line.shape"), std::string::npos);
  EXPECT_FALSE(ParseSimConfig(R"({"line": {"burst": 0}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"line": {"window_ms": 0}})").has_value());
  EXPECT_FALSE(ParseSimConfig(R"({"latency_ms": -1})").has_value());
}

// Verifies the configured latency: every platform answer is late by latency_ms plus at most
// latency_jitter_ms, the same draws for the same seed, other draws for another.
TEST(HiddenLimitTest, AnswersAreLateBySeededLatency) {
  auto delays = [](int seed) {
    FakeClock clock;
    auto sim = Simulator::Create(clock, R"({"latency_ms": 10, "latency_jitter_ms": 20, "seed": )" +
                                            std::to_string(seed) + "}");
    EXPECT_TRUE(sim.has_value());
    std::vector<int> out;
    for (int i = 0; i < 20; ++i) {
      SimResponse r = (*sim)->Handle(Post("/v2/bot/message/push",
                                          R"({"to":"U1","messages":[{"type":"text","text":"hi"}]})",
                                          {{"authorization", "Bearer t"}}));
      EXPECT_EQ(r.status, 200);
      out.push_back(r.delay_ms);
    }
    return out;
  };
  const std::vector<int> one = delays(1);
  for (int d : one) {
    EXPECT_GE(d, 10);
    EXPECT_LE(d, 30);
  }
  EXPECT_EQ(delays(1), one);
  EXPECT_NE(delays(2), one);
}

}  // namespace
}  // namespace egress::sim
