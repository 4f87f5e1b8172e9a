#include "tests/simulator/fault_book.h"

#include <gtest/gtest.h>

#include "tests/simulator/sim_test_requests.h"
#include "tests/support/fake_clock.h"

namespace egress::sim {
namespace {

// Verifies resets come first, then the storm, then normal service, counted per destination.
TEST(FaultBookTest, ResetsThenStormThenNormal) {
  FakeClock clock;
  FaultBook book;
  FaultPlan plan{.reset_first = 1, .storm_first = 2, .storm_status = 502};
  EXPECT_TRUE(book.Decide("d", plan, clock.WallNow()).reset_connection);
  for (int i = 0; i < 2; ++i) {
    FaultDecision d = book.Decide("d", plan, clock.WallNow());
    ASSERT_TRUE(d.replacement.has_value());
    EXPECT_EQ(d.replacement->status, 502);
    EXPECT_FALSE(d.after_accept);
  }
  FaultDecision normal = book.Decide("d", plan, clock.WallNow());
  EXPECT_FALSE(normal.reset_connection);
  EXPECT_FALSE(normal.replacement.has_value());
  EXPECT_TRUE(book.Decide("other", plan, clock.WallNow()).reset_connection);
}

// Verifies a fixed status carries Retry-After as seconds, as an IMF-fixdate, or verbatim.
TEST(FaultBookTest, RetryAfterForms) {
  FakeClock clock;  // 2026-01-01T00:00:00Z
  FaultBook book;
  FaultDecision secs =
      book.Decide("a", FaultPlan{.status = 503, .retry_after_s = 120}, clock.WallNow());
  EXPECT_EQ(HeaderOf(*secs.replacement, "Retry-After"), "120");
  EXPECT_EQ(secs.retry_after_s, 120);
  FaultDecision date =
      book.Decide("b", FaultPlan{.status = 429, .retry_after_s = 30, .retry_after_date = true},
                  clock.WallNow());
  EXPECT_EQ(HeaderOf(*date.replacement, "Retry-After"), "Thu, 01 Jan 2026 00:00:30 GMT");
  FaultDecision raw =
      book.Decide("c", FaultPlan{.status = 429, .retry_after_raw = "1.5"}, clock.WallNow());
  EXPECT_EQ(HeaderOf(*raw.replacement, "Retry-After"), "1.5");
  EXPECT_FALSE(raw.retry_after_s.has_value());
}

// Verifies configured extra headers ride on fault answers (a redirect, IETF RateLimit fields).
TEST(FaultBookTest, ExtraHeaders) {
  FakeClock clock;
  FaultBook book;
  FaultPlan plan{.status = 301, .headers = {{"Location", "http://127.0.0.1:1/elsewhere"}}};
  FaultDecision d = book.Decide("d", plan, clock.WallNow());
  EXPECT_EQ(d.replacement->status, 301);
  EXPECT_EQ(HeaderOf(*d.replacement, "Location"), "http://127.0.0.1:1/elsewhere");
}

// Verifies a plan with only a delay passes every request through, slowed.
TEST(FaultBookTest, DelayOnly) {
  FakeClock clock;
  FaultBook book;
  FaultDecision d = book.Decide("d", FaultPlan{.delay_ms = 250}, clock.WallNow());
  EXPECT_EQ(d.delay_ms, 250);
  EXPECT_FALSE(d.replacement.has_value());
  EXPECT_FALSE(d.reset_connection);
}

}  // namespace
}  // namespace egress::sim
