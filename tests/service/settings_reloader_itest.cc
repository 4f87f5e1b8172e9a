// SettingsReloader over an in-memory store, with a 1 ms tick and both the loop and the storage
// pool run by hand, one handler at a time (the timer is real): what it reads and applies, when it
// reads nothing, how a failure is retried, and how a change of the node's own drops a read that
// may predate it.

#include <chrono>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "dispatcher/service/settings_reloader.h"
#include "tests/support/memory_queue_store.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;

class SettingsReloaderTest : public ::testing::Test {
 protected:
  // Runs one handler of the loop: a tick (which posts a read to the pool, unless a local change
  // is open) or a read's answer.
  void LoopOne() { ASSERT_EQ(io_.run_one_for(std::chrono::seconds(5)), 1u); }
  // Runs one read on the pool.
  void PoolOne() { ASSERT_EQ(pool_.run_one_for(std::chrono::seconds(5)), 1u); }
  // One tick with its read and its answer.
  void Cycle() {
    LoopOne();
    PoolOne();
    LoopOne();
  }
  // Stores a quota setting of `tenant` as the admin API writes one (another node, here).
  void PutQuota(const std::string& tenant, int64_t limit) {
    ASSERT_TRUE(
        store_
            .PutSetting(QuotasKey(tenant),
                        R"({"monthly":{"limit":)" + std::to_string(limit) + R"(,"window":"30d"}})")
            .ok());
  }
  uint64_t StoreVersion() { return *store_.SettingsVersion(); }

  asio::io_context io_;
  asio::io_context pool_;
  asio::executor_work_guard<asio::io_context::executor_type> io_work_ = asio::make_work_guard(io_);
  asio::executor_work_guard<asio::io_context::executor_type> pool_work_ =
      asio::make_work_guard(pool_);
  storage::MemoryQueueStore store_;
  std::vector<StoredSettings> applied_;
  Status answer_;  // what apply returns
  SettingsReloader reloader_{io_, pool_.get_executor(), store_,
                             [this](const StoredSettings& s) {
                               applied_.push_back(s);
                               return answer_;
                             },
                             SettingsReloader::Options{.every = Millis(1)}};
};

// Verifies that a tick reads nothing more than the version while it has not moved, and that once
// another writer moved it every setting is read and applied once, with the version remembered.
TEST_F(SettingsReloaderTest, AppliesOnceEachTimeTheVersionMoved) {
  reloader_.Start(StoreVersion());
  Cycle();
  EXPECT_TRUE(applied_.empty());
  PutQuota("acme", 5);
  Cycle();
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_[0].quotas.at("acme").at("monthly").limit, 5);
  EXPECT_EQ(applied_[0].version, StoreVersion());
  EXPECT_EQ(reloader_.applied(), StoreVersion());
  Cycle();
  Cycle();
  EXPECT_EQ(applied_.size(), 1u);
  ASSERT_TRUE(store_.PutSetting(QuotasKey("acme"), "").ok());
  Cycle();
  ASSERT_EQ(applied_.size(), 2u);
  EXPECT_TRUE(applied_[1].quotas.empty());
}

// Verifies that an apply that fails leaves the version unapplied, so that every tick tries again
// until one succeeds; and that a setting that does not parse is never applied (the read fails),
// and is read again once it was fixed.
TEST_F(SettingsReloaderTest, FailuresAreRetriedEveryTick) {
  reloader_.Start(StoreVersion());
  const uint64_t before = reloader_.applied();
  answer_ = Status::Corruption("tenants acme and globex have a key in common");
  PutQuota("acme", 5);
  Cycle();
  Cycle();
  EXPECT_EQ(applied_.size(), 2u);
  EXPECT_EQ(reloader_.applied(), before);
  answer_ = Status::Ok();
  Cycle();
  EXPECT_EQ(applied_.size(), 3u);
  EXPECT_EQ(reloader_.applied(), StoreVersion());

  ASSERT_TRUE(store_.PutSetting(QuotasKey("acme"), "not json").ok());
  Cycle();
  Cycle();
  EXPECT_EQ(applied_.size(), 3u);
  PutQuota("acme", 7);
  Cycle();
  ASSERT_EQ(applied_.size(), 4u);
  EXPECT_EQ(applied_[3].quotas.at("acme").at("monthly").limit, 7);
}

// Verifies that no read starts while the node's own change is under way, and that a read made
// while one began is dropped unapplied (it may predate that change's write) and made again at the
// next tick.
TEST_F(SettingsReloaderTest, LocalChangesDropReadsThatMayPredateThem) {
  reloader_.Start(StoreVersion());
  PutQuota("acme", 5);
  reloader_.BeginLocalChange();
  LoopOne();  // the tick: no read
  EXPECT_EQ(pool_.poll(), 0u);
  reloader_.EndLocalChange();

  LoopOne();                     // the tick posts a read...
  reloader_.BeginLocalChange();  // ...and the node's own change begins before its answer
  PoolOne();
  LoopOne();
  EXPECT_TRUE(applied_.empty());
  PutQuota("acme", 6);  // the change's write
  reloader_.EndLocalChange();
  Cycle();
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_[0].quotas.at("acme").at("monthly").limit, 6);
}

// Verifies that a store that cannot be read changes nothing and the ticks go on, and that Stop
// ends them.
TEST_F(SettingsReloaderTest, UnreadableStoreChangesNothingAndStopEndsTheTicks) {
  reloader_.Start(StoreVersion());
  PutQuota("acme", 5);
  ASSERT_TRUE(store_.Close().ok());
  Cycle();
  Cycle();
  EXPECT_TRUE(applied_.empty());
  EXPECT_EQ(reloader_.applied(), 0u);
  reloader_.Stop();
  io_.poll();
  EXPECT_EQ(pool_.poll(), 0u);
}

}  // namespace
}  // namespace egress::service
