#include "dispatcher/pacing/adaptive_pace.h"

#include <initializer_list>

#include <gtest/gtest.h>

namespace egress::pacing {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

// Verifies that a 429 halves the limit down to the floor, keeping scale and capping burst.
TEST(AdaptivePaceTest, ThrottleHalvesDownToFloor) {
  AdaptivePaceOptions options;
  options.min_limit = 3;
  AdaptivePace pace(options, Budget{20, 1000, 8}, false);
  ASSERT_TRUE(pace.OnThrottle(0));
  EXPECT_EQ(pace.Current(), (Budget{10, 1000, 8}));
  ASSERT_TRUE(pace.OnThrottle(0));
  EXPECT_EQ(pace.Current(), (Budget{5, 1000, 5}));
  ASSERT_TRUE(pace.OnThrottle(0));
  EXPECT_EQ(pace.Current().limit, 3);
  ASSERT_TRUE(pace.OnThrottle(0));
  EXPECT_EQ(pace.Current().limit, 3);
}

// Verifies that 429s arriving while the previous decrease's park lasts are held off.
TEST(AdaptivePaceTest, HoldsOffUntilParkEnds) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));
  EXPECT_EQ(pace.Park(Millis(1000), 0, 0), Millis(1000));
  EXPECT_FALSE(pace.OnThrottle(kSecond - 1));
  EXPECT_EQ(pace.Current().limit, 1000);
  EXPECT_TRUE(pace.OnThrottle(kSecond));
  EXPECT_EQ(pace.Current().limit, 500);
}

// Verifies that the park doubles with consecutive 429s, is jittered by up to half, caps at
// max_park, and starts over after a success.
TEST(AdaptivePaceTest, ParkGrowsWithJitterAndResets) {
  AdaptivePaceOptions options;
  options.max_park = Millis(5000);
  AdaptivePace pace(options, Budget{2000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));
  EXPECT_EQ(pace.Park(Millis(1000), 0, 0), Millis(1000));
  ASSERT_TRUE(pace.OnThrottle(10 * kSecond));
  EXPECT_EQ(pace.Park(Millis(1000), 1000, 10 * kSecond), Millis(3000));  // 2000 + 1000 % 1001
  ASSERT_TRUE(pace.OnThrottle(20 * kSecond));
  EXPECT_EQ(pace.Park(Millis(1000), 7, 20 * kSecond), Millis(4007));
  ASSERT_TRUE(pace.OnThrottle(30 * kSecond));
  EXPECT_EQ(pace.Park(Millis(1000), 2000, 30 * kSecond), Millis(5000));  // capped
  pace.OnSuccess(36 * kSecond);
  ASSERT_TRUE(pace.OnThrottle(40 * kSecond));
  EXPECT_EQ(pace.Park(Millis(1000), 0, 40 * kSecond), Millis(1000));
}

// Verifies recovery after a halving: the 429 at the old level bounds the probes back up, so the
// first window of successes bisects toward it (50 -> 75), the next ones close the gap, and the
// limit never passes the ceiling.
TEST(AdaptivePaceTest, RecoversTowardTheFailedLevelUpToCeiling) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{100, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));
  ASSERT_EQ(pace.Current().limit, 50);
  for (int i = 0; i < 49; ++i) {
    EXPECT_FALSE(pace.OnSuccess(kSecond));
  }
  EXPECT_TRUE(pace.OnSuccess(kSecond));
  EXPECT_EQ(pace.Current().limit, 75);
  int64_t sent = 0;
  while (!pace.at_ceiling() && sent < 100'000) {
    pace.OnSuccess(kSecond);
    ++sent;
  }
  EXPECT_EQ(pace.Current().limit, 100);
  EXPECT_FALSE(pace.OnSuccess(kSecond));
  EXPECT_EQ(pace.Current().limit, 100);
}

// Verifies additive recovery from a level far below the one that failed (a counted window that
// delivered a tenth of the limit): 10% of the lowered limit per window, the step doubling after
// increases_per_doubling increases, so a limit that went away is found again quickly.
TEST(AdaptivePaceTest, StepDoublesAfterRunOfIncreases) {
  AdaptivePaceOptions options;
  options.increases_per_doubling = 2;
  AdaptivePace pace(options, Budget{1000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0, RecentWindow{200, 100}));  // delivered 100: limit 100, step 10
  ASSERT_EQ(pace.Current().limit, 100);
  auto window = [&pace] {
    const int64_t limit = pace.Current().limit;
    for (int64_t i = 0; i < limit; ++i) {
      pace.OnSuccess(kSecond);
    }
    return pace.Current().limit;
  };
  EXPECT_EQ(window(), 110);
  EXPECT_EQ(window(), 120);  // second increase: the step doubles to 20
  EXPECT_EQ(window(), 140);
  EXPECT_EQ(window(), 160);  // the step doubles to 40
  EXPECT_EQ(window(), 200);
}

// Verifies the cohort estimate: responses arriving during the park (sent before it) refine the
// decrease by their share of successes, never above the plain halving.
TEST(AdaptivePaceTest, CohortDuringParkRefinesDecrease) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));
  pace.Park(Millis(1000), 0, 0);
  for (int i = 0; i < 19; ++i) {
    EXPECT_FALSE(pace.OnThrottle(kSecond / 2));  // held off: 20 429s, no success
  }
  EXPECT_EQ(pace.Current().limit, 100);  // 2000 * 1 / 20
  EXPECT_TRUE(pace.OnSuccess(kSecond / 2));
  EXPECT_EQ(pace.Current().limit, 190);  // 2000 * 2 / 21
  for (int i = 0; i < 100; ++i) {
    pace.OnSuccess(kSecond / 2);
  }
  EXPECT_EQ(pace.Current().limit, 1000);  // never above the halving
  // After the park, a success counts toward the next increase instead.
  EXPECT_FALSE(pace.OnSuccess(kSecond));
  EXPECT_EQ(pace.Current().limit, 1000);
}

// Verifies that a 429 right after an increase returns to the level before it (no halving) and
// that the next probes bisect between it and the failed level; a probe that fails within the
// additive step doubles the windows before the next one; a 429 at a level that held for a whole
// window lowers the limit.
TEST(AdaptivePaceTest, FailedProbeBacksOffToLastGoodLevel) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{1000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));  // 500: the 429 at 1000 bounds the probes
  auto window = [&pace] {
    const int64_t limit = pace.Current().limit;
    for (int64_t i = 0; i < limit; ++i) {
      pace.OnSuccess(kSecond);
    }
    return pace.Current().limit;
  };
  EXPECT_EQ(window(), 750);
  ASSERT_TRUE(pace.OnThrottle(kSecond));  // the probe at 750 failed
  EXPECT_EQ(pace.Current().limit, 500);
  EXPECT_EQ(window(), 625);  // half way to 750
  EXPECT_EQ(window(), 687);
  ASSERT_TRUE(pace.OnThrottle(kSecond));  // 687 failed: within 10% of 625, so ...
  EXPECT_EQ(pace.Current().limit, 625);
  EXPECT_EQ(window(), 625);  // ... two windows before the next probe
  EXPECT_EQ(window(), 687);
  EXPECT_EQ(window(), 687);  // a whole window passed at 687 ...
  ASSERT_TRUE(pace.OnThrottle(kSecond));
  EXPECT_EQ(pace.Current().limit, 343);  // ... so this 429 means the limit fell
}

// A first window's 429 at `now_ns` after `delivered` deliveries: slow start from that floor,
// parked for a quarter of a window (the window is 1 s).
void StartSlow(AdaptivePace& pace, int64_t delivered, int64_t now_ns) {
  ASSERT_TRUE(pace.OnThrottle(now_ns, RecentWindow{delivered + 1, delivered, true}));
  ASSERT_EQ(pace.Current().limit, delivered);
  ASSERT_EQ(pace.Park(Millis(1000), 0, now_ns), Millis(250));
}

// Slow start's failed step at `now_ns` lets nothing through: the first 429 starts the
// measurement and the fourth, with `last` as the key's last window, ends it.
void NothingThrough(AdaptivePace& pace, int64_t now_ns, const RecentWindow& last) {
  ASSERT_FALSE(pace.OnThrottle(now_ns + 1'000'000));
  ASSERT_TRUE(pace.measuring());
  EXPECT_FALSE(pace.OnThrottle(now_ns + 2'000'000));
  EXPECT_FALSE(pace.OnThrottle(now_ns + 3'000'000));
  ASSERT_TRUE(pace.OnThrottle(now_ns + 4'000'000, last));
}

// Verifies slow start's growth: a third of a window's worth of the level delivered without a
// 429 multiplies it by 4 below 8 units, by 2 from there.
TEST(AdaptivePaceTest, SlowStartGrowsEachThirdOfAWindow) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  StartSlow(pace, 2, 0);
  const int64_t after = kSecond / 2;
  EXPECT_TRUE(pace.OnSuccess(after));  // 2 / 3 rounds to one delivery
  EXPECT_EQ(pace.Current().limit, 8);
  EXPECT_TRUE(pace.probing());
  EXPECT_FALSE(pace.OnSuccess(after));
  EXPECT_TRUE(pace.OnSuccess(after));  // 8 / 3: two
  EXPECT_EQ(pace.Current().limit, 16);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(pace.OnSuccess(after));
  }
  EXPECT_TRUE(pace.OnSuccess(after));  // 16 / 3: five
  EXPECT_EQ(pace.Current().limit, 32);
}

// Verifies the measurement of slow start's failed step: the 429 neither lowers nor parks, the
// level is pressed on, and once a quarter of a window has passed with at least 8 deliveries the
// limit becomes what got through per window (8 in 320 ms: 25 per second); 429s in the next
// window are held off, and the probes bisect toward the measured level.
TEST(AdaptivePaceTest, AFailedSlowStartStepIsMeasured) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  StartSlow(pace, 16, 0);
  int64_t now = kSecond / 2;
  for (int i = 0; i < 5; ++i) {
    pace.OnSuccess(now);
  }
  ASSERT_EQ(pace.Current().limit, 32);
  now += kSecond / 10;
  EXPECT_FALSE(pace.OnThrottle(now));
  EXPECT_TRUE(pace.measuring());
  EXPECT_EQ(pace.Current().limit, 32);
  const int64_t start = now;
  for (int i = 1; i < 8; ++i) {
    EXPECT_FALSE(pace.OnSuccess(start + i * 40'000'000));
  }
  EXPECT_FALSE(pace.OnThrottle(start + 300'000'000));  // a second 429: still measuring
  EXPECT_TRUE(pace.OnSuccess(start + 320'000'000));
  EXPECT_FALSE(pace.measuring());
  EXPECT_EQ(pace.Current().limit, 25);
  EXPECT_FALSE(pace.probing());
  EXPECT_TRUE(pace.WantsCanary(start + 320'000'000));  // ended by a delivery: at once
  EXPECT_FALSE(pace.OnThrottle(start + 900'000'000));  // held off: the measured level's cohort
  EXPECT_EQ(pace.Current().limit, 25);
  now = start + 1'400'000'000;
  for (int i = 0; i < 25; ++i) {
    pace.OnSuccess(now);
  }
  EXPECT_EQ(pace.Current().limit, 28);  // half way to 32
}

// Verifies that a measurement ends at its fourth 429 after the first however short its span,
// and that its estimate is held to 3/4 of the level before the step (here 12 of 16).
TEST(AdaptivePaceTest, AMeasurementEndsAtItsFourth429) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  StartSlow(pace, 16, 0);
  const int64_t now = kSecond / 2;
  for (int i = 0; i < 5; ++i) {
    pace.OnSuccess(now);
  }
  ASSERT_FALSE(pace.OnThrottle(now + 1'000'000));
  EXPECT_FALSE(pace.OnSuccess(now + 2'000'000));
  EXPECT_FALSE(pace.OnThrottle(now + 3'000'000));
  EXPECT_FALSE(pace.OnThrottle(now + 4'000'000));
  EXPECT_FALSE(pace.OnThrottle(now + 5'000'000));
  ASSERT_TRUE(pace.OnThrottle(now + 100'000'000));
  EXPECT_EQ(pace.Current().limit, 12);  // 1 in 99 ms is 10 per second: held to 12
  // The level before it held: one emission interval of it, 429s held off for a window.
  EXPECT_EQ(pace.Park(Millis(1000), 0, now + 100'000'000), Millis(83));
  EXPECT_EQ(pace.park_until_ns(), now + 183'000'000);
  EXPECT_EQ(pace.hold_until_ns(), now + 1'100'000'000);
}

// A key whose first window delivered 16 (at 0 s), then `successes` deliveries at 0.5 s: slow
// start's steps (5 take it to 32, 15 to 64).
AdaptivePace SteppedFrom16(int successes) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  StartSlow(pace, 16, 0);
  for (int i = 0; i < successes; ++i) {
    pace.OnSuccess(kSecond / 2);
  }
  return pace;
}

// Slow start's failed step measured from `now`: its first 429 1 ms after, then deliveries and
// 429s at these ms after `now` (the deliveries first); the last 429 ends the measurement.
void Measure(AdaptivePace& pace, int64_t now, std::initializer_list<int64_t> ok_ms,
             std::initializer_list<int64_t> refused_ms) {
  ASSERT_FALSE(pace.OnThrottle(now + 1'000'000));
  ASSERT_TRUE(pace.measuring());
  for (int64_t ms : ok_ms) {
    EXPECT_FALSE(pace.OnSuccess(now + ms * 1'000'000));
  }
  size_t left = refused_ms.size();
  for (int64_t ms : refused_ms) {
    EXPECT_EQ(pace.OnThrottle(now + ms * 1'000'000), --left == 0);
  }
}

// Verifies that a measurement shorter than a 16th of a window is held to the share of requests
// that got through: 2 deliveries in 6 ms read 333/s, but 2 of 7 requests at 32/s are 9/s (held
// to the floor, 12). Read from the span alone the limit stayed at 31, above the platform's.
TEST(AdaptivePaceTest, AShortMeasurementIsHeldToTheShareThatGotThrough) {
  AdaptivePace pace = SteppedFrom16(5);
  ASSERT_EQ(pace.Current().limit, 32);
  Measure(pace, kSecond / 2, {2, 3}, {4, 5, 6, 7});
  EXPECT_EQ(pace.Current().limit, 12);
}

// Verifies that the measurement's floor is 3/4 of the first window's count when the level
// before the step is higher: that level passed its third of a window, but a sliding log's
// empty history can let a level through that long (880/s over a 445/s log). Here 16 was the
// first window's count and 32 the level before the step to 64: 2 in 300 ms is held to 12, not
// to 24.
TEST(AdaptivePaceTest, TheMeasurementsFloorIsTheFirstWindowsCountAtMost) {
  AdaptivePace pace = SteppedFrom16(5 + 10);  // 16 -> 32 -> 64
  ASSERT_EQ(pace.Current().limit, 64);
  Measure(pace, kSecond / 2, {100, 200}, {250, 260, 280, 301});
  EXPECT_EQ(pace.Current().limit, 12);
}

// Verifies that a window that waited on a hold (the key's own or one adopted from another node)
// and sent under 3/4 of the level is a floor, not a rate: the limit falls by the decrease at most
// (600 -> 300, not 250). A window that pressed the level for a whole window after the hold is the
// rate (250).
TEST(AdaptivePaceTest, AWindowThatWaitedOnAHoldIsAFloor) {
  // 1000 -> 600 at 0 s, parked (and held) until 0.4 s; then a 429 at `at_ns` with `last`.
  auto limit_after = [](int64_t at_ns, const RecentWindow& last) {
    AdaptivePace pace(AdaptivePaceOptions{}, Budget{1000, 1000, 1}, false);
    EXPECT_TRUE(pace.OnThrottle(0, RecentWindow{1000, 600, false}));
    EXPECT_EQ(pace.Park(Millis(1000), 0, 0), Millis(400));
    EXPECT_TRUE(pace.OnThrottle(at_ns, last));
    return pace.Current().limit;
  };
  EXPECT_EQ(limit_after(kSecond, RecentWindow{300, 250, false}), 300);
  EXPECT_EQ(limit_after(kSecond + kSecond / 2, RecentWindow{300, 250, false}), 250);  // pressed
  EXPECT_EQ(limit_after(kSecond, RecentWindow{450, 250, false}), 250);  // sent 3/4 of 600

  // Another node's hold counts too: 600 adopted with a hold until 0.4 s.
  AdaptivePace adopted(AdaptivePaceOptions{}, Budget{1000, 1000, 1}, false);
  adopted.Adopt(600, false, 400'000'000, 0);
  ASSERT_TRUE(adopted.OnThrottle(kSecond, RecentWindow{300, 250, false}));
  EXPECT_EQ(adopted.Current().limit, 300);
}

// Verifies that a measurement that lets nothing through (the first 429 and three more) reads a
// spent window's count: the limit becomes the last whole window's deliveries, its 429s are held
// off for a window, and a canary looks for the window's end after max(1/32 window, an emission
// interval) instead of the key waiting the whole window out.
TEST(AdaptivePaceTest, AMeasurementThatLetsNothingThroughLooksForTheWindowsEnd) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  StartSlow(pace, 16, 0);
  const int64_t now = 2 * kSecond;
  for (int i = 0; i < 5; ++i) {
    pace.OnSuccess(now);
  }
  NothingThrough(pace, now, RecentWindow{24, 14, false});
  EXPECT_EQ(pace.Current().limit, 14);
  EXPECT_EQ(pace.Park(Millis(1000), 0, now + 4'000'000), Millis(72));  // 1000 / 14, rounded up
  EXPECT_EQ(pace.hold_until_ns(), now + 4'000'000 + kSecond);
  EXPECT_FALSE(pace.WantsCanary(now + 75'000'000));
  EXPECT_TRUE(pace.WantsCanary(now + 76'000'000));
}

// Verifies that a measurement that lets nothing through is held to the first window's floor: a
// window counted across two of a fixed window's read 26 where the platform's count is 20.
TEST(AdaptivePaceTest, AMeasurementThatLetsNothingThroughKeepsTheFirstWindowsCount) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  StartSlow(pace, 20, 0);
  const int64_t now = kSecond + kSecond / 4;
  for (int i = 0; i < 6 + 13; ++i) {  // 20 -> 40 -> 80: 40 held for a third of a window
    pace.OnSuccess(now);
  }
  ASSERT_EQ(pace.Current().limit, 80);
  NothingThrough(pace, now, RecentWindow{31, 26, false});
  EXPECT_EQ(pace.Current().limit, 20);
  EXPECT_EQ(pace.Park(Millis(1000), 0, now + 4'000'000), Millis(50));
}

// Verifies the canary of a failed probe's hold: none before the probe's park ends, one at a
// time, refused ones waiting a step that doubles from a 32nd of a window up to a quarter and
// never past the hold, held-off 429s waiting for the gate; delivered, the gate opens and a
// held-off 429 goes at once.
TEST(AdaptivePaceTest, AFailedProbesCanaryLooksForRoomInDoublingSteps) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{1000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));  // 500
  EXPECT_EQ(pace.Park(Millis(1000), 0, 0), Millis(1000));
  EXPECT_FALSE(pace.WantsCanary(kSecond / 2));  // a decrease's hold has no canary
  EXPECT_EQ(pace.HeldOffUntil(kSecond / 2), kSecond);
  for (int i = 0; i < 500; ++i) {
    pace.OnSuccess(2 * kSecond);
  }
  ASSERT_EQ(pace.Current().limit, 750);
  const int64_t t = 3 * kSecond;
  ASSERT_TRUE(pace.OnThrottle(t));  // the probe failed
  EXPECT_EQ(pace.Park(Millis(1000), 0, t), Millis(2));
  EXPECT_FALSE(pace.WantsCanary(t + 1'000'000));
  EXPECT_EQ(pace.HeldOffUntil(t + 1'000'000), t + 2'000'000);
  ASSERT_TRUE(pace.WantsCanary(t + 2'000'000));
  pace.SetCanary(7, 42, t + 2'000'000);
  EXPECT_EQ(pace.CanaryParkUntil(t + 2'000'000), t + 33'250'000);  // a first step
  EXPECT_TRUE(pace.WantsCanary(t + 33'250'000));  // unanswered by its park's end: replaced
  EXPECT_FALSE(pace.WantsCanary(t + 3'000'000));
  EXPECT_TRUE(pace.IsCanary(7, 42));
  EXPECT_FALSE(pace.IsCanary(7, 43));
  EXPECT_FALSE(pace.IsCanary(8, 42));
  EXPECT_FALSE(pace.OnThrottle(t + 20'000'000));                  // held off, as the canary's is
  EXPECT_EQ(pace.CanaryRefused(t + 20'000'000), t + 51'250'000);  // 1000 ms / 32
  EXPECT_EQ(pace.HeldOffUntil(t + 30'000'000), t + 51'250'000);
  EXPECT_FALSE(pace.WantsCanary(t + 51'000'000));
  EXPECT_TRUE(pace.WantsCanary(t + 51'250'000));
  // Parked twice the refused canary's 18 ms round trip when that is longer than a first step.
  EXPECT_EQ(pace.CanaryParkUntil(t + 51'250'000), t + 87'250'000);
  EXPECT_EQ(pace.CanaryRefused(t + 60'000'000), t + 122'500'000);
  EXPECT_EQ(pace.CanaryRefused(t + 130'000'000), t + 255'000'000);
  EXPECT_EQ(pace.CanaryRefused(t + 260'000'000), t + 510'000'000);
  EXPECT_EQ(pace.CanaryRefused(t + 520'000'000), t + 770'000'000);  // a quarter at most
  EXPECT_EQ(pace.CanaryRefused(t + 800'000'000), t + kSecond);      // the hold at most
  pace.SetCanary(7, 44, t + 850'000'000);
  pace.CanaryDelivered(t + 890'000'000);
  EXPECT_EQ(pace.CanaryParkUntil(t + 890'000'000), t + 970'000'000);  // twice its 40 ms
  EXPECT_TRUE(pace.gate_open());
  EXPECT_FALSE(pace.WantsCanary(t + 900'000'000));
  EXPECT_FALSE(pace.IsCanary(7, 44));
  EXPECT_EQ(pace.HeldOffUntil(t + 900'000'000), t + 900'000'000);
  EXPECT_EQ(pace.Current().limit, 500);
  // Spent again: the gate closes, and the steps start over.
  EXPECT_EQ(pace.CanaryRefused(t + 900'000'000), t + 931'250'000);
  EXPECT_FALSE(pace.gate_open());
}

// A key lowered from 1,000 to 500 at 0 s whose probe to 750 failed at 3 s: back at 500, parked
// 2 ms, its other 429s held off until 4 s.
AdaptivePace FailedProbeAt3s() {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{1000, 1000, 1}, false);
  EXPECT_TRUE(pace.OnThrottle(0));
  pace.Park(Millis(1000), 0, 0);
  for (int i = 0; i < 500; ++i) {
    pace.OnSuccess(2 * kSecond);
  }
  EXPECT_TRUE(pace.OnThrottle(3 * kSecond));
  EXPECT_EQ(pace.Park(Millis(1000), 0, 3 * kSecond), Millis(2));
  return pace;
}

// Verifies that the gate's waits stay within max_park on a long window: a key paced per hour
// would otherwise park 112.5 s behind a canary (a 32nd of the hour) and 15 min after refusals.
TEST(AdaptivePaceTest, TheGatesWaitsStayWithinMaxPark) {
  AdaptivePaceOptions options;
  options.max_park = Millis(100);
  AdaptivePace pace(options, Budget{100, 3'600'000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));  // 50 an hour
  pace.Park(Millis(1000), 0, 0);
  const int64_t hour = 3600 * kSecond;
  for (int i = 0; i < 50; ++i) {
    pace.OnSuccess(2 * hour);
  }
  ASSERT_EQ(pace.Current().limit, 75);
  const int64_t t = 3 * hour;
  ASSERT_TRUE(pace.OnThrottle(t));
  EXPECT_EQ(pace.Park(Millis(1000), 0, t), Millis(100));
  ASSERT_TRUE(pace.WantsCanary(t + 100'000'000));
  pace.SetCanary(1, 1, t + 100'000'000);
  EXPECT_EQ(pace.CanaryParkUntil(t + 100'000'000), t + 200'000'000);
  EXPECT_EQ(pace.CanaryRefused(t + 150'000'000), t + 250'000'000);
}

// Verifies that another node's hold, adopted after this node's own failed probe's hold ended,
// has no canary here: its 429s wait for its end, as any adopted hold's.
TEST(AdaptivePaceTest, AnAdoptedHoldHasNoCanary) {
  AdaptivePace pace = FailedProbeAt3s();
  ASSERT_TRUE(pace.WantsCanary(3 * kSecond + 2'000'000));
  const int64_t later = 5 * kSecond;
  pace.Adopt(400, false, later + kSecond, later);
  EXPECT_FALSE(pace.WantsCanary(later + 1'000'000));
  EXPECT_EQ(pace.HeldOffUntil(later + 1'000'000), later + kSecond);
}

// Verifies that consecutive decreases that each read a rate from a counted window park what
// the decrease took away, not doubled: following a fall of the platform's limit down a window
// at a time, the third had parked 2.4 s. With nothing delivered in the window (no rate read)
// the park still doubles.
TEST(AdaptivePaceTest, DecreasesThatReadARateDoNotDoubleThePark) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{20, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0, RecentWindow{20, 18, false}));
  EXPECT_EQ(pace.Park(Millis(1000), 0, 0), Millis(100));
  ASSERT_TRUE(pace.OnThrottle(200'000'000, RecentWindow{18, 16, false}));
  EXPECT_EQ(pace.Park(Millis(1000), 0, 200'000'000), Millis(112));  // doubled: 224
  ASSERT_TRUE(pace.OnThrottle(400'000'000, RecentWindow{16, 9, false}));
  EXPECT_EQ(pace.Park(Millis(1000), 0, 400'000'000), Millis(438));  // doubled twice: 1,752

  AdaptivePace nothing(AdaptivePaceOptions{}, Budget{20, 1000, 1}, false);
  ASSERT_TRUE(nothing.OnThrottle(0, RecentWindow{20, 0, false}));
  EXPECT_EQ(nothing.Park(Millis(1000), 0, 0), Millis(500));
  ASSERT_TRUE(nothing.OnThrottle(kSecond, RecentWindow{10, 0, false}));
  EXPECT_EQ(nothing.Park(Millis(1000), 0, kSecond), Millis(1000));
}

// Verifies that a canary's answer that says nothing about the rate lets the next request be the
// canary.
TEST(AdaptivePaceTest, ALostCanaryIsReplaced) {
  AdaptivePace pace = FailedProbeAt3s();
  pace.SetCanary(1, 1, 3 * kSecond + 2'000'000);
  EXPECT_FALSE(pace.WantsCanary(3 * kSecond + 10'000'000));
  pace.CanaryLost();
  EXPECT_TRUE(pace.WantsCanary(3 * kSecond + 10'000'000));
  EXPECT_FALSE(pace.IsCanary(1, 1));
}

// Verifies that the first window's parks double with each 429 but end a window after the first
// of them at the latest, whatever the jitter drawn: by then the spent count is back. A first
// window after a pause in the traffic counts from its own first 429.
TEST(AdaptivePaceTest, FirstWindowParksEndAWindowAfterTheFirst429) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  const int64_t start = 3 * kSecond;
  StartSlow(pace, 20, start);  // parked 250 ms
  ASSERT_TRUE(pace.OnThrottle(start + 300'000'000, RecentWindow{22, 20, true}));
  EXPECT_EQ(pace.Park(Millis(1000), 0, start + 300'000'000), Millis(500));
  ASSERT_TRUE(pace.OnThrottle(start + 850'000'000, RecentWindow{23, 20, true}));
  EXPECT_EQ(pace.Current().limit, 20);
  EXPECT_EQ(pace.Park(Millis(1000), 499, start + 850'000'000), Millis(150));  // not 1,000 + 499
  EXPECT_EQ(pace.park_until_ns(), start + kSecond);
  EXPECT_EQ(pace.hold_until_ns(), start + kSecond);

  // Quiet for seconds (no delivery since), then a fresh stream's first window.
  const int64_t again = start + 10 * kSecond;
  ASSERT_TRUE(pace.OnThrottle(again, RecentWindow{21, 20, true}));
  // The 4th in a row (250 ms x 8), held to a window from this 429, not from the first one.
  EXPECT_EQ(pace.Park(Millis(1000), 0, again), Millis(1000));
}

// Verifies that the reading of a measurement that lets nothing through is not held below half
// of it: a bucket's first window delivered only its burst (2), not a window's count, and the
// last window's 10 leave at least 5.
TEST(AdaptivePaceTest, AMeasurementThatLetsNothingThroughKeepsHalfTheWindow) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  StartSlow(pace, 2, 0);
  const int64_t now = 2 * kSecond;
  pace.OnSuccess(now);  // 2 -> 8
  pace.OnSuccess(now);
  pace.OnSuccess(now);  // 8 -> 16
  ASSERT_EQ(pace.Current().limit, 16);
  NothingThrough(pace, now, RecentWindow{14, 10, false});
  EXPECT_EQ(pace.Current().limit, 5);
}

// Verifies that a decrease after a whole window parks the part of a window it took away
// (100 -> 80: 200 ms), at least one emission interval of the new limit (10 -> 9: 111 ms, not
// the 100 ms taken away), and that the 429 goes again when the park ends.
TEST(AdaptivePaceTest, ADecreaseParksThePartOfAWindowItTookAway) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{100, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0, RecentWindow{100, 80, false}));
  EXPECT_EQ(pace.Current().limit, 80);
  EXPECT_EQ(pace.Park(Millis(1000), 0, 0), Millis(200));
  EXPECT_EQ(pace.park_until_ns(), 200'000'000);
  EXPECT_EQ(pace.hold_until_ns(), 200'000'000);

  AdaptivePace near(AdaptivePaceOptions{}, Budget{10, 1000, 1}, false);
  ASSERT_TRUE(near.OnThrottle(0, RecentWindow{10, 9, false}));
  EXPECT_EQ(near.Current().limit, 9);
  EXPECT_EQ(near.Park(Millis(1000), 0, 0), Millis(111));
}

// Verifies that decreases within a window of each other follow one fall of the platform's
// limit down: the next probe still comes after one window, not two, four, eight.
TEST(AdaptivePaceTest, AFallFollowedDownKeepsProbing) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{100, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0, RecentWindow{100, 60, false}));  // 60
  pace.Park(Millis(1000), 0, 0);
  ASSERT_TRUE(pace.OnThrottle(500'000'000, RecentWindow{60, 40, false}));  // 40, same fall
  pace.Park(Millis(1000), 0, 500'000'000);
  ASSERT_EQ(pace.Current().limit, 40);
  for (int i = 0; i < 40; ++i) {
    pace.OnSuccess(2 * kSecond);
  }
  EXPECT_EQ(pace.Current().limit, 50);  // one window: half way to 60

  // The same level failing again more than a window later waits two windows.
  AdaptivePace again(AdaptivePaceOptions{}, Budget{100, 1000, 1}, false);
  ASSERT_TRUE(again.OnThrottle(0, RecentWindow{100, 60, false}));
  again.Park(Millis(1000), 0, 0);
  ASSERT_TRUE(again.OnThrottle(3 * kSecond, RecentWindow{60, 40, false}));
  again.Park(Millis(1000), 0, 3 * kSecond);
  for (int i = 0; i < 40; ++i) {
    again.OnSuccess(5 * kSecond);
  }
  EXPECT_EQ(again.Current().limit, 40);
  for (int i = 0; i < 40; ++i) {
    again.OnSuccess(6 * kSecond);
  }
  EXPECT_EQ(again.Current().limit, 50);
}

// Verifies that a new ceiling clamps the current limit.
TEST(AdaptivePaceTest, SetCeilingClamps) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{100, 1000, 1}, true);
  ASSERT_TRUE(pace.OnThrottle(0));
  pace.SetCeiling(Budget{30, 1000, 1});
  EXPECT_EQ(pace.Current().limit, 30);
  EXPECT_TRUE(pace.at_ceiling());
  EXPECT_FALSE(pace.ceiling_learned());
}

// Verifies Adopt (another node's decrease): 429s and successes here during its hold change
// nothing (they are that decrease's cohort), and a 429 after it decreases from the adopted level.
TEST(AdaptivePaceTest, AdoptedDecreaseHoldsOffItsCohort) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  pace.Adopt(100, false, kSecond, 0);
  EXPECT_EQ(pace.Current().limit, 100);
  EXPECT_FALSE(pace.OnThrottle(kSecond / 2));
  EXPECT_FALSE(pace.OnThrottle(kSecond / 2));
  EXPECT_FALSE(pace.OnSuccess(kSecond / 2));
  EXPECT_EQ(pace.Current().limit, 100);
  EXPECT_TRUE(pace.OnThrottle(kSecond));
  EXPECT_EQ(pace.Current().limit, 50);
}

// Verifies Adopt (another node's step up): the limit is held to [min_limit, ceiling], and a 429
// within the first window of an adopted probe goes back to the level before it.
TEST(AdaptivePaceTest, AdoptedProbeThatFailsGoesBack) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{1000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));
  pace.Park(Millis(1000), 0, 0);
  ASSERT_EQ(pace.Current().limit, 500);
  pace.Adopt(5000, true, 0, 2 * kSecond);
  EXPECT_EQ(pace.Current().limit, 1000) << "never above the ceiling";
  pace.Adopt(0, false, 0, 2 * kSecond);
  EXPECT_EQ(pace.Current().limit, 1) << "never below min_limit";
  pace.Adopt(500, false, 0, 2 * kSecond);
  pace.Adopt(550, true, 0, 2 * kSecond);
  EXPECT_TRUE(pace.probing());
  EXPECT_TRUE(pace.OnThrottle(2 * kSecond));
  EXPECT_EQ(pace.Current().limit, 500);
}

// Verifies Adopt during a hold of this node's own: the adopted limit stands, and the rest of
// this node's cohort does not refine it (the two nodes would otherwise trade estimates).
TEST(AdaptivePaceTest, AdoptDuringOwnHoldKeepsTheAdoptedLimit) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));
  pace.Park(Millis(1000), 0, 0);
  ASSERT_EQ(pace.Current().limit, 1000);
  pace.Adopt(900, false, 0, kSecond / 2);
  EXPECT_FALSE(pace.OnThrottle(kSecond / 2 + 1));
  EXPECT_FALSE(pace.OnSuccess(kSecond / 2 + 2));
  EXPECT_EQ(pace.Current().limit, 900);
  EXPECT_EQ(pace.hold_until_ns(), kSecond);
}

// Verifies that during a decrease's hold a higher limit from another node changes nothing (that
// node had not seen the decrease) and a lower one is taken; after the hold, any limit is.
TEST(AdaptivePaceTest, AHigherLimitDuringAHoldChangesNothing) {
  AdaptivePace pace(AdaptivePaceOptions{}, Budget{2000, 1000, 1}, false);
  ASSERT_TRUE(pace.OnThrottle(0));
  pace.Park(Millis(1000), 0, 0);
  ASSERT_EQ(pace.Current().limit, 1000);
  pace.Adopt(1800, false, 0, kSecond / 2);
  EXPECT_EQ(pace.Current().limit, 1000);
  pace.Adopt(20, false, 0, kSecond / 2);
  EXPECT_EQ(pace.Current().limit, 20);
  pace.Adopt(40, true, 0, 2 * kSecond);
  EXPECT_EQ(pace.Current().limit, 40);
  EXPECT_TRUE(pace.probing());
}

}  // namespace
}  // namespace egress::pacing
