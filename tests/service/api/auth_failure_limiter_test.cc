#include "dispatcher/service/api/auth_failure_limiter.h"

#include <string>

#include <boost/asio/ip/address.hpp>
#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace egress::service {
namespace {

using boost::asio::ip::make_address;

// Verifies a source may fail `burst` times, is then blocked for exactly the budget's interval,
// and may fail again once that passed; other sources are not touched.
TEST(AuthFailureLimiterTest, BlocksPastTheBudgetUntilItRefills) {
  FakeClock clock;
  AuthFailureLimiter limiter(clock, {3, 60'000, 3});
  const auto peer = make_address("192.0.2.7");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(limiter.Blocked(peer), Millis(0)) << i;
    limiter.Fail(peer);
  }
  EXPECT_EQ(limiter.Blocked(peer), Millis(20'000));
  EXPECT_EQ(limiter.Blocked(make_address("192.0.2.8")), Millis(0));
  clock.Advance(Millis(19'999));
  EXPECT_EQ(limiter.Blocked(peer), Millis(1));
  clock.Advance(Millis(1));
  EXPECT_EQ(limiter.Blocked(peer), Millis(0));
  limiter.Fail(peer);
  EXPECT_GT(limiter.Blocked(peer), Millis(0));
}

// Verifies an IPv6 source is its /64 (one host holds a whole /64) and a v4-mapped address is
// its IPv4 address.
TEST(AuthFailureLimiterTest, SourcesAreIpv4OrIpv6Slash64) {
  EXPECT_EQ(AuthFailureLimiter::SourceOf(make_address("2001:db8:1:2:aaaa::1")),
            "2001:db8:1:2::/64");
  EXPECT_EQ(AuthFailureLimiter::SourceOf(make_address("::ffff:192.0.2.1")), "192.0.2.1");
  FakeClock clock;
  AuthFailureLimiter limiter(clock, {1, 60'000, 1});
  limiter.Fail(make_address("2001:db8:1:2::1"));
  EXPECT_GT(limiter.Blocked(make_address("2001:db8:1:2:ffff::9")), Millis(0));
  EXPECT_EQ(limiter.Blocked(make_address("2001:db8:1:3::1")), Millis(0));
}

// Verifies the table stays within max_sources whatever the number of addresses, forgetting the
// source nearest to an empty meter first.
TEST(AuthFailureLimiterTest, RemembersAtMostMaxSources) {
  FakeClock clock;
  AuthFailureLimiter limiter(clock, {2, 60'000, 2}, 100);
  const auto busy = make_address("198.51.100.1");
  limiter.Fail(busy);
  limiter.Fail(busy);  // full: blocked for 30 s
  for (int i = 0; i < 10'000; ++i) {
    clock.Advance(Millis(1));
    limiter.Fail(make_address("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256)));
    ASSERT_LE(limiter.size(), 100u);
  }
  // 10 s on, the busy source's meter is still the fullest: it was never the one forgotten.
  EXPECT_GT(limiter.Blocked(busy), Millis(0));
}

}  // namespace
}  // namespace egress::service
