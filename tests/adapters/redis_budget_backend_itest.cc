#include <chrono>
#include <optional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/redis_budget_backend.h"
#include "adapters/redis_connection.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/leased_budget_store.h"
#include "dispatcher/pacing/memory_budget_store.h"
#include "tests/support/redis_test.h"
#include "tests/support/shared_meter_contract.h"

namespace egress::adapters {
namespace {

using pacing::Charge;
using pacing::GcraParams;
using pacing::MemoryBudgetStore;
using pacing::Nanos;
using pacing::ParkKind;
using pacing::TakeResult;

// A connection to a fresh redis-server and a backend on it (RedisTest drives the loop).
class RedisFixture : public RedisTest {
 protected:
  void SetUp() override {
    RedisTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    connection_ = Connect();
    ASSERT_NE(connection_, nullptr);
    backend_ = std::make_unique<RedisBudgetBackend>(*connection_, "test:");
  }

  TakeResult Take(const std::vector<Charge>& charges, int64_t now_us) {
    std::optional<Result<TakeResult>> answer;
    backend_->TakeAllAtForTest(charges, now_us, [&](Result<TakeResult> r) { answer = r; });
    EXPECT_TRUE(RunUntil([&] { return answer.has_value(); }));
    EXPECT_TRUE(answer.has_value() && answer->has_value())
        << (answer.has_value() && !answer->has_value() ? answer->error().message() : "");
    return answer.has_value() && answer->has_value() ? **answer : TakeResult{};
  }

  std::unique_ptr<RedisConnection> connection_;
  std::unique_ptr<RedisBudgetBackend> backend_;
};

// Verifies that the Lua scripts decide exactly as MemoryBudgetStore on the same random sequences
// of charges over shared scopes, parks, unparks, syncs, rescales and inspections
// (tests/support/shared_meter_contract.h).
TEST_F(RedisFixture, ScriptsDecideAsTheMemoryStore) {
  SharedMeterUnderTest store =
      AsyncBackendUnderTest(*backend_, [this](auto done) { return RunUntil(done); });
  for (uint64_t seed : {1u, 2u, 3u}) {
    ExpectDecidesAsTheMemoryStore(store, seed, 600);
  }
}

// Verifies that a take over several scopes takes from none of them when one denies.
TEST_F(RedisFixture, TakesAllOrNone) {
  GcraParams slow{.interval_ns = 1'000'000'000, .depth = 1};
  GcraParams fast{.interval_ns = 1'000'000, .depth = 1};
  const int64_t now_us = 5'000'000'000;
  ASSERT_TRUE(Take({Charge{1, slow, 1}}, now_us).allowed);
  // Key 2 would conform, key 1 does not: nothing is taken from key 2.
  TakeResult denied = Take({Charge{2, fast, 1}, Charge{1, slow, 1}}, now_us);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.denied_index, 1u);
  EXPECT_EQ(denied.retry_after, Nanos(1'000'000'000));
  TakeResult again = Take({Charge{2, fast, 1}}, now_us);
  EXPECT_TRUE(again.allowed);
  EXPECT_EQ(again.remaining, 0);
}

// Verifies that keys expire once idle: a meter lives about as long as it holds anything.
TEST_F(RedisFixture, KeysExpireWhenIdle) {
  GcraParams params{.interval_ns = 1'000'000, .depth = 1};
  std::optional<Result<RedisReply>> ttl;
  ASSERT_TRUE(Take({Charge{7, params, 1}}, 9'000'000'000).allowed);
  connection_->Command({"PTTL", "test:m:0000000000000007"},
                       [&](Result<RedisReply> r) { ttl = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return ttl.has_value(); }));
  ASSERT_TRUE(ttl->has_value());
  EXPECT_EQ((*ttl)->type, RedisReply::Type::kInteger);
  EXPECT_GT((*ttl)->integer, 0);
  EXPECT_LE((*ttl)->integer, 1001);
}

// Verifies that the connection reports an outage, fails calls with kUnavailable instead of
// waiting, and comes back by itself when Redis returns.
TEST_F(RedisFixture, ReconnectsAfterAnOutage) {
  std::vector<bool> states;
  connection_->SetStateObserver([&](bool up, const std::string&) { states.push_back(up); });
  redis_.Stop();
  ASSERT_TRUE(RunUntil([&] { return !connection_->up(); }));
  EXPECT_FALSE(backend_->up());
  std::optional<Result<TakeResult>> answer;
  backend_->TakeAll({Charge{1, GcraParams{}, 1}}, Nanos(0),
                    [&](Result<TakeResult> r) { answer = r; });
  ASSERT_TRUE(RunUntil([&] { return answer.has_value(); }));
  ASSERT_FALSE(answer->has_value());
  EXPECT_EQ(answer->error().code(), Status::Code::kUnavailable);
  ASSERT_TRUE(redis_.Start()) << redis_.error();
  ASSERT_TRUE(RunUntil([&] { return connection_->up(); }));
  // An empty Redis lost the scripts: EVALSHA falls back to EVAL.
  TakeResult taken = Take({Charge{1, GcraParams{}, 1}}, 1'000'000);
  EXPECT_TRUE(taken.allowed);
  EXPECT_TRUE(backend_->up());
  ASSERT_GE(states.size(), 2u);
  EXPECT_FALSE(states.front());
  EXPECT_TRUE(states.back());
}

// Verifies reservations: a take that conforms within reserve_ahead is taken now and answered
// with the wait until it may go, charged as if taken then (the next one queues behind it, no
// time of the meter is lost); one further out is denied with its wait, and nothing is taken.
TEST_F(RedisFixture, ReservesUnitsThatConformSoon) {
  GcraParams global{.interval_ns = 20'000'000, .depth = 1};  // 50/s
  const int64_t t0 = 7'000'000'000;
  auto reserve = [&](int64_t now_us, Nanos ahead) {
    std::optional<Result<TakeResult>> answer;
    backend_->TakeAllAtForTest(
        {Charge{3, global, 1}}, now_us, [&](Result<TakeResult> r) { answer = r; }, ahead);
    EXPECT_TRUE(RunUntil([&] { return answer.has_value(); }));
    return answer.has_value() && answer->has_value() ? **answer : TakeResult{};
  };
  TakeResult first = reserve(t0, Nanos(100'000'000));
  EXPECT_TRUE(first.allowed);
  EXPECT_EQ(first.retry_after, Nanos(0));
  TakeResult second = reserve(t0 + 5'000, Nanos(100'000'000));
  EXPECT_TRUE(second.allowed);
  EXPECT_EQ(second.retry_after, Nanos(15'000'000));  // at t0 + 20 ms
  TakeResult third = reserve(t0 + 5'000, Nanos(100'000'000));
  EXPECT_TRUE(third.allowed);
  EXPECT_EQ(third.retry_after, Nanos(35'000'000));  // at t0 + 40 ms
  TakeResult far = reserve(t0 + 5'000, Nanos(30'000'000));
  EXPECT_FALSE(far.allowed);
  EXPECT_EQ(far.retry_after, Nanos(55'000'000));  // nothing taken: still t0 + 60 ms
  TakeResult plain = reserve(t0 + 60'000, Nanos(0));
  EXPECT_TRUE(plain.allowed);
  EXPECT_EQ(plain.retry_after, Nanos(0));
}

// Verifies that a reservation charges every meter of the path no earlier than one slice-time
// before its units go: a global unit (20 ms) free now, reserved with a route unit free only in
// 30 ms, is counted at +10 ms (the next global unit conforms at +30 ms, not +20 ms), so it is
// never counted more than 20 ms before it is sent.
TEST_F(RedisFixture, ReservationChargesEveryMeterWhenTheUnitsGo) {
  GcraParams global{.interval_ns = 20'000'000, .depth = 1};
  GcraParams route{.interval_ns = 1'000'000'000, .depth = 1};
  const int64_t t0 = 9'000'000'000;
  auto take = [&](std::vector<Charge> charges, int64_t now_us, Nanos ahead) {
    std::optional<Result<TakeResult>> answer;
    backend_->TakeAllAtForTest(
        std::move(charges), now_us, [&](Result<TakeResult> r) { answer = r; }, ahead);
    EXPECT_TRUE(RunUntil([&] { return answer.has_value(); }));
    return answer.has_value() && answer->has_value() ? **answer : TakeResult{};
  };
  EXPECT_TRUE(take({Charge{5, route, 1}}, t0 - 970'000, Nanos(0)).allowed);  // free at t0 + 30 ms
  TakeResult both = take({Charge{4, global, 1}, Charge{5, route, 1}}, t0, Nanos(100'000'000));
  EXPECT_TRUE(both.allowed);
  EXPECT_EQ(both.retry_after, Nanos(30'000'000));
  TakeResult next = take({Charge{4, global, 1}}, t0, Nanos(0));
  EXPECT_FALSE(next.allowed);
  EXPECT_EQ(next.retry_after, Nanos(30'000'000));
}

// Verifies that parks are shared: a Retry-After and a remaining-0 park one node applies hold the
// other node's next take on those keys, with the wait that is left.
TEST_F(RedisFixture, ParksReachEveryNode) {
  std::unique_ptr<RedisConnection> other_connection = Connect();
  ASSERT_NE(other_connection, nullptr);
  RedisBudgetBackend other_backend(*other_connection, "test:");
  pacing::LeasedBudgetStore a(clock_, *backend_, pacing::LeasedBudgetStoreOptions{});
  pacing::LeasedBudgetStore b(clock_, other_backend, pacing::LeasedBudgetStoreOptions{});
  const GcraParams params{.interval_ns = 1'000'000, .depth = 10};
  ASSERT_TRUE(a.Park(11, clock_.Now() + std::chrono::seconds(3), ParkKind::kRetryAfter).ok());
  ASSERT_TRUE(a.Park(12, clock_.Now() + std::chrono::seconds(3), ParkKind::kRemainingZero).ok());
  for (const auto& [key, kind] : {std::pair{pacing::ScopeKey{11}, ParkKind::kRetryAfter},
                                  std::pair{pacing::ScopeKey{12}, ParkKind::kRemainingZero}}) {
    const Charge path[] = {Charge{99, params, 1}, Charge{key, params, 1}};
    Result<TakeResult> first = b.TakeAll(path, clock_.Now());  // asks for leases
    ASSERT_TRUE(first.has_value());
    EXPECT_FALSE(first->allowed);
    Result<TakeResult> held = first;
    ASSERT_TRUE(RunUntil([&] {
      held = b.TakeAll(path, clock_.Now());
      return held.has_value() && held->park != ParkKind::kNone;
    })) << "node b never saw the park of "
        << key;
    EXPECT_FALSE(held->allowed);
    EXPECT_EQ(held->denied_index, 1u);
    EXPECT_EQ(held->park, kind);
    EXPECT_GT(held->retry_after, std::chrono::seconds(2));
    EXPECT_LE(held->retry_after, std::chrono::seconds(3));
  }
}

}  // namespace
}  // namespace egress::adapters
