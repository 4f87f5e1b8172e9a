#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/dynamodb_budget_backend.h"
#include "adapters/dynamodb_client.h"
#include "dispatcher/pacing/leased_budget_store.h"
#include "tests/support/dynamodb_test.h"
#include "tests/support/shared_meter_contract.h"

namespace egress::adapters {
namespace {

using pacing::Charge;
using pacing::GcraParams;
using pacing::Nanos;
using pacing::ParkKind;
using pacing::TakeResult;

// A client of a fresh dynalite and a backend on it.
class DynamoFixture : public DynamoTest {
 protected:
  void SetUp() override {
    DynamoTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    client_ = Connect();
    ASSERT_NE(client_, nullptr);
    backend_ = std::make_unique<DynamoBudgetBackend>(*client_, clock_, "test:");
  }

  Result<TakeResult> Take(DynamoBudgetBackend& backend, const std::vector<Charge>& charges,
                          int64_t now_us) {
    std::optional<Result<TakeResult>> answer;
    backend.TakeAllAtForTest(charges, now_us, [&](Result<TakeResult> r) { answer = r; });
    EXPECT_TRUE(RunUntil([&] { return answer.has_value(); }));
    return answer.value_or(Status::TimedOut("no answer"));
  }

  std::unique_ptr<DynamoDbClient> client_;
  std::unique_ptr<DynamoBudgetBackend> backend_;
};

// Verifies that the backend decides exactly as MemoryBudgetStore through the table: the reads,
// the conditional writes, parks, unparks, syncs, rescales and inspections
// (tests/support/shared_meter_contract.h; the arithmetic alone runs longer sequences in
// shared_meter_test.cc).
TEST_F(DynamoFixture, DecidesAsTheMemoryStore) {
  SharedMeterUnderTest store =
      AsyncBackendUnderTest(*backend_, [this](auto done) { return RunUntil(done); });
  ExpectDecidesAsTheMemoryStore(store, 1, 400);
}

// Verifies that a take over several scopes takes from none of them when one denies.
TEST_F(DynamoFixture, TakesAllOrNone) {
  GcraParams slow{.interval_ns = 1'000'000'000, .depth = 1};
  GcraParams fast{.interval_ns = 1'000'000, .depth = 1};
  const int64_t now_us = 5'000'000'000;
  ASSERT_TRUE(Take(*backend_, {Charge{1, slow, 1}}, now_us)->allowed);
  Result<TakeResult> denied = Take(*backend_, {Charge{2, fast, 1}, Charge{1, slow, 1}}, now_us);
  ASSERT_TRUE(denied.has_value());
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->denied_index, 1u);
  EXPECT_EQ(denied->retry_after, Nanos(1'000'000'000));
  Result<TakeResult> again = Take(*backend_, {Charge{2, fast, 1}}, now_us);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->allowed);
}

// Verifies the conditional writes: two nodes (two clients) each send 40 takes of one budget of
// 10 at once, at one instant, and no more than 10 are allowed in all. Without the version
// condition takes that read the same item would each go through.
TEST_F(DynamoFixture, ConcurrentNodesNeverSpendMoreThanTheBudget) {
  std::unique_ptr<DynamoDbClient> other_client = Connect();
  ASSERT_NE(other_client, nullptr);
  DynamoBudgetBackend other(*other_client, clock_, "test:");
  const GcraParams ten{.interval_ns = 1'000'000'000, .depth = 10};
  const int64_t now_us = 8'000'000'000;
  int answered = 0;
  int allowed = 0;
  int failed = 0;
  for (int i = 0; i < 40; ++i) {
    for (DynamoBudgetBackend* backend : {backend_.get(), &other}) {
      backend->TakeAllAtForTest(
          {Charge{21, ten, 1}, Charge{static_cast<pacing::ScopeKey>(22 + i % 3), ten, 0}}, now_us,
          [&](Result<TakeResult> r) {
            ++answered;
            failed += r.has_value() ? 0 : 1;
            allowed += r.has_value() && r->allowed ? 1 : 0;
          });
    }
  }
  ASSERT_TRUE(RunUntil([&] { return answered == 80; }));
  EXPECT_EQ(failed, 0);
  EXPECT_GT(backend_->conflicts() + other.conflicts(), 0u);
  // What the race left is taken one by one: never more than 10 in all. A take that lost its race
  // four times is denied as contended, and a unit written by a take that then lost on another
  // meter stays counted when another node wrote over it, so a few may be lost, never gained.
  int later = 0;
  for (int i = 0; i < 12; ++i) {
    Result<TakeResult> next = Take(*backend_, {Charge{21, ten, 1}}, now_us);
    ASSERT_TRUE(next.has_value());
    later += next->allowed ? 1 : 0;
  }
  EXPECT_LE(allowed + later, 10);
  EXPECT_GE(allowed + later, 8);
  EXPECT_GE(allowed, 1);
}

// Verifies the take without a read: a node that knows the items decides from them and writes
// under their versions; when another node wrote since, the condition fails and the take reads
// and decides again, so the budget holds.
TEST_F(DynamoFixture, RememberedItemsSkipTheReadAndAnotherNodesWriteIsCaught) {
  std::unique_ptr<DynamoDbClient> other_client = Connect();
  ASSERT_NE(other_client, nullptr);
  DynamoBudgetBackend other(*other_client, clock_, "test:");
  const GcraParams three{.interval_ns = 1'000'000'000, .depth = 3};
  const int64_t now_us = 9'000'000'000;
  ASSERT_TRUE(Take(*backend_, {Charge{31, three, 1}}, now_us)->allowed);  // read, remembered
  const uint64_t requests = client_->requests();
  ASSERT_TRUE(Take(*backend_, {Charge{31, three, 1}}, now_us)->allowed);
  EXPECT_EQ(backend_->unread_takes(), 1u);
  EXPECT_EQ(client_->requests(), requests + 1);                       // the write alone
  ASSERT_TRUE(Take(other, {Charge{31, three, 1}}, now_us)->allowed);  // the third unit
  Result<TakeResult> fourth = Take(*backend_, {Charge{31, three, 1}}, now_us);
  ASSERT_TRUE(fourth.has_value());
  EXPECT_FALSE(fourth->allowed);
  EXPECT_EQ(fourth->retry_after, Nanos(1'000'000'000));
  EXPECT_EQ(backend_->unread_misses(), 1u);
}

// Verifies that parks are shared: a Retry-After park one node applies holds the other node's
// next take on that key, with the wait that is left.
TEST_F(DynamoFixture, ParksReachEveryNode) {
  std::unique_ptr<DynamoDbClient> other_client = Connect();
  ASSERT_NE(other_client, nullptr);
  DynamoBudgetBackend other_backend(*other_client, clock_, "test:");
  pacing::LeasedBudgetStore a(clock_, *backend_, pacing::LeasedBudgetStoreOptions{});
  pacing::LeasedBudgetStore b(clock_, other_backend, pacing::LeasedBudgetStoreOptions{});
  const GcraParams params{.interval_ns = 1'000'000, .depth = 10};
  ASSERT_TRUE(a.Park(11, clock_.Now() + std::chrono::seconds(3), ParkKind::kRetryAfter).ok());
  const Charge path[] = {Charge{99, params, 1}, Charge{11, params, 1}};
  Result<TakeResult> held = b.TakeAll(path, clock_.Now());
  ASSERT_TRUE(RunUntil([&] {
    held = b.TakeAll(path, clock_.Now());
    return held.has_value() && held->park != ParkKind::kNone;
  })) << "node b never saw the park";
  EXPECT_FALSE(held->allowed);
  EXPECT_EQ(held->denied_index, 1u);
  EXPECT_EQ(held->park, ParkKind::kRetryAfter);
  EXPECT_GT(held->retry_after, std::chrono::seconds(2));
  EXPECT_LE(held->retry_after, std::chrono::seconds(3));
}

// Verifies an outage: calls fail with kUnavailable instead of waiting, the client goes down, and
// it comes back by itself when DynamoDB answers again (its table made again: create_table).
TEST_F(DynamoFixture, GoesDownAndComesBackAfterAnOutage) {
  std::vector<bool> states;
  client_->SetStateObserver([&](bool up, const std::string&) { states.push_back(up); });
  dynalite_.Stop();
  std::optional<Result<TakeResult>> answer;
  backend_->TakeAll({Charge{1, GcraParams{}, 1}}, Nanos(0),
                    [&](Result<TakeResult> r) { answer = r; });
  ASSERT_TRUE(RunUntil([&] { return answer.has_value(); }));
  ASSERT_FALSE(answer->has_value());
  EXPECT_EQ(answer->error().code(), Status::Code::kUnavailable);
  EXPECT_FALSE(backend_->up());
  ASSERT_TRUE(dynalite_.Start()) << dynalite_.error();
  ASSERT_TRUE(RunUntil([&] { return client_->up(); }));
  Result<TakeResult> taken = Take(*backend_, {Charge{1, GcraParams{}, 1}}, 1'000'000);
  ASSERT_TRUE(taken.has_value()) << taken.error().message();
  EXPECT_TRUE(taken->allowed);
  ASSERT_GE(states.size(), 2u);
  EXPECT_FALSE(states.front());
  EXPECT_TRUE(states.back());
}

}  // namespace
}  // namespace egress::adapters
