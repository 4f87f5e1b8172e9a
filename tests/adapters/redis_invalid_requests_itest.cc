#include <chrono>
#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/invalid_request_counter.h"
#include "adapters/redis_connection.h"
#include "adapters/redis_invalid_requests.h"
#include "dispatcher/base/clock.h"
#include "tests/support/redis_test.h"

namespace egress::adapters {
namespace {

using SlotCounts = RedisInvalidRequests::SlotCounts;

// Two nodes' connections to one fresh redis-server (RedisTest drives the loop).
class RedisInvalidRequestsTest : public RedisTwoNodesTest {
 protected:
  Result<SlotCounts> Add(RedisInvalidRequests& node, const std::string& token) {
    std::optional<Result<SlotCounts>> answer;
    node.Add(token, [&](Result<SlotCounts> r) { answer = std::move(r); });
    EXPECT_TRUE(RunUntil([&] { return answer.has_value(); }));
    return answer.has_value() ? *answer : Status::Unavailable("no answer");
  }

  static int64_t Total(const SlotCounts& slots) {
    int64_t total = 0;
    for (const auto& slot : slots) {
      EXPECT_GE(slot.age, 0);
      EXPECT_LT(slot.age, InvalidRequestCounter::kSlots);
      total += slot.count;
    }
    return total;
  }
};

// Verifies that two nodes count one token's invalid requests together, tokens apart, and that a
// node's counter stops the token on what both sent (the cluster reaches the threshold though
// neither node alone does).
TEST_F(RedisInvalidRequestsTest, NodesCountOneTokenTogether) {
  RedisInvalidRequests a(*connections_[0], "test:", std::chrono::minutes(10));
  RedisInvalidRequests b(*connections_[1], "test:", std::chrono::minutes(10));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Add(a, "bot-1").has_value());
  }
  Result<SlotCounts> seen = Add(b, "bot-1");
  ASSERT_TRUE(seen.has_value()) << seen.error().message();
  EXPECT_EQ(Total(*seen), 4);
  Result<SlotCounts> other = Add(b, "bot-2");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(Total(*other), 1);

  InvalidRequestCounter counter({.threshold = 4, .window = std::chrono::minutes(10)});
  const SteadyTime now = clock_.Now();
  EXPECT_FALSE(counter.Record("bot-1", 401, pacing::RateLimitScope::kUnknown, now).has_value());
  counter.MergeShared("bot-1", *seen, now);
  EXPECT_TRUE(counter.StopUntil("bot-1", now).has_value());
}

// Verifies that the hash expires with the window: a slot is dropped once it is out of it, and
// the key does not outlive the window by more than a slot.
TEST_F(RedisInvalidRequestsTest, CountsLeaveWithTheWindow) {
  // A 600 ms window: 10 ms slots.
  RedisInvalidRequests a(*connections_[0], "test:", std::chrono::milliseconds(600));
  ASSERT_TRUE(Add(a, "bot-1").has_value());
  std::optional<Result<RedisReply>> ttl;
  connections_[0]->Command({"PTTL", "test:discord_invalid:bot-1"},
                           [&](Result<RedisReply> r) { ttl = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return ttl.has_value(); }));
  ASSERT_TRUE(ttl->has_value());
  EXPECT_GT((*ttl)->integer, 0);
  EXPECT_LE((*ttl)->integer, 610);

  // Liveness wait: well past the window, the old count is gone and only the new one is there.
  const SteadyTime until = clock_.Now() + std::chrono::milliseconds(700);
  RunUntil([&] { return clock_.Now() >= until; });
  Result<SlotCounts> later = Add(a, "bot-1");
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(Total(*later), 1);
}

// Verifies that Redis going away is an error value, not a hang or a crash.
TEST_F(RedisInvalidRequestsTest, UnreachableRedisIsUnavailable) {
  RedisInvalidRequests a(*connections_[0], "test:", std::chrono::minutes(10));
  redis_.Stop();
  Result<SlotCounts> answer = Add(a, "bot-1");
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().code(), Status::Code::kUnavailable);
}

}  // namespace
}  // namespace egress::adapters
