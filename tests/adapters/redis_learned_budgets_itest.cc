#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/redis_connection.h"
#include "adapters/redis_learned_budgets.h"
#include "tests/support/learned_updates.h"
#include "tests/support/redis_test.h"

namespace egress::adapters {
namespace {

using pacing::LearnedUpdate;

// Two nodes' shares on one fresh redis-server (RedisTest drives the loop).
class RedisLearnedBudgetsTest : public RedisTwoNodesTest {
 protected:
  std::unique_ptr<RedisLearnedBudgets> Share(int node, const std::string& instance) {
    auto share = std::make_unique<RedisLearnedBudgets>(
        io_, *connections_[node], "test:", instance, Millis(20),
        [this, node](const LearnedUpdate& update, Millis age) {
          EXPECT_GE(age, Millis(0));
          EXPECT_LT(age, Millis(5000)) << "the age of a fresh entry on Redis' clock";
          got_[node].push_back(update);
        });
    share->Start();
    return share;
  }

  void Raw(std::vector<std::string> argv) {
    bool done = false;
    connections_[0]->Command(std::move(argv), [&](Result<RedisReply>) { done = true; });
    ASSERT_TRUE(RunUntil([&] { return done; }));
  }

  std::vector<LearnedUpdate> got_[2];
};

// Verifies that an update one node publishes reaches the other node, in order, the latest per key
// only, and never comes back to the node that published it; and that a node started later reads
// what is still in the stream.
TEST_F(RedisLearnedBudgetsTest, UpdatesReachTheOtherNodesInOrder) {
  auto a = Share(0, "node-a/1");
  auto b = Share(1, "node-b/1");
  a->Publish(BudgetUpdate(1, 10));
  a->Publish(BudgetUpdate(1, 15));  // replaces the first: one entry per key and poll
  a->Publish(BudgetUpdate(3, 20));
  b->Publish(BudgetUpdate(2, 30));
  ASSERT_TRUE(RunUntil([&] { return got_[1].size() == 2 && got_[0].size() == 1; }));
  EXPECT_EQ(got_[1][0], BudgetUpdate(1, 15));
  EXPECT_EQ(got_[1][1], BudgetUpdate(3, 20));
  EXPECT_EQ(got_[0][0], BudgetUpdate(2, 30));
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(got_[0].size(), 1u) << "a node's own updates are not applied again";
  EXPECT_EQ(got_[1].size(), 2u);
  EXPECT_EQ(a->published(), 2u);
  EXPECT_EQ(b->applied(), 2u);

  got_[1].clear();
  auto late = Share(1, "node-b/2");  // a restart of b: a new instance
  ASSERT_TRUE(RunUntil([&] { return got_[1].size() == 3; }));
  EXPECT_EQ(got_[1][2], BudgetUpdate(2, 30));
}

// Verifies that what another writer put in the stream is hostile input: entries of any other
// shape are skipped and counted, and the updates around them still apply.
TEST_F(RedisLearnedBudgetsTest, HostileEntriesAreSkipped) {
  auto b = Share(1, "node-b/1");
  Raw({"XADD", "test:learned", "*", "n", "evil", "u", "b 0000000000000001 0 1 1 0 0 0"});
  Raw({"XADD", "test:learned", "*", "n", "evil"});
  Raw({"XADD", "test:learned", "*", "u", std::string(5000, 'b')});
  Raw({"XADD", "test:learned", "*", "n", "evil", "u", "f 0000000000000007"});
  ASSERT_TRUE(RunUntil([&] { return got_[1].size() == 1 && b->rejected() == 3; }));
  EXPECT_EQ(got_[1][0].kind, LearnedUpdate::Kind::kForget);
  EXPECT_EQ(got_[1][0].key, 7u);
  // A key of another type where the stream should be: reads fail, nothing crashes.
  Raw({"DEL", "test:learned"});
  Raw({"SET", "test:learned", "not a stream"});
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(got_[1].size(), 1u);
}

// Verifies that the stream expires when no node writes: every write sets its TTL.
TEST_F(RedisLearnedBudgetsTest, StreamExpiresWhenNoNodeWrites) {
  auto a = Share(0, "node-a/1");
  for (int i = 0; i < 30; ++i) {
    a->Publish(BudgetUpdate(100 + i, 10));
  }
  ASSERT_TRUE(RunUntil([&] { return a->published() == 30; }));
  io_.run_for(std::chrono::milliseconds(50));
  std::optional<Result<RedisReply>> ttl;
  connections_[0]->Command({"PTTL", "test:learned"}, [&](Result<RedisReply> r) { ttl = r; });
  ASSERT_TRUE(RunUntil([&] { return ttl.has_value(); }));
  ASSERT_TRUE(ttl->has_value());
  EXPECT_GT((*ttl)->integer, 0);
  EXPECT_LE((*ttl)->integer, RedisLearnedBudgets::kTtl.count());
}

}  // namespace
}  // namespace egress::adapters
