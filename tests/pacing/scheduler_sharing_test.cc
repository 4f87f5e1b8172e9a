// Two Schedulers (two nodes) that share what responses teach them through a LearnedShare
// (docs/pacing.md, "Shared learning"), on one fake clock. The shared meters are the store's
// business (LeasedBudgetStore, RedisBudgetBackend) and are not what these tests are about: each
// node has its own MemoryBudgetStore.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"
#include "tests/support/scheduler_driver.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

DestinationSpec Spec(Platform platform, std::string target, std::string credential = "cred-1") {
  return AcmeSpec(platform, std::move(target), std::move(credential));
}

DeliveryOutcome Http(int status) { return HttpOutcome(status); }

// What a node published, kept until the test hands it to the other node.
class RecordingShare : public LearnedShare {
 public:
  void Publish(const LearnedUpdate& update) override { updates.push_back(update); }
  pacing::LearnedShareCounts counts() const override { return {.published = updates.size()}; }
  std::vector<LearnedUpdate> updates;
};

// One node: a Scheduler with its own store, publishing into `share`.
class Node {
 public:
  explicit Node(FakeClock& clock) : clock_(clock), scheduler_(clock, store_, random_, {}) {
    scheduler_.SetLearnedShare(&share_);
  }

  DestinationId Add(const DestinationSpec& spec) { return *scheduler_.AddDestination(spec); }
  uint64_t Dispatch(DestinationId id) { return driver_.Dispatch(id); }
  Verdict Complete(DestinationId id, uint64_t sequence, const DeliveryOutcome& outcome) {
    return driver_.Complete(id, sequence, outcome);
  }
  void SendOk(DestinationId id, int n) { driver_.SendOk(id, n); }
  // Hands everything this node published to `other`, as the share would; returns how many.
  size_t DeliverTo(Node& other) {
    const size_t n = share_.updates.size();
    for (const LearnedUpdate& update : share_.updates) {
      EXPECT_TRUE(other.scheduler_.ApplyLearned(update).ok());
    }
    share_.updates.clear();
    return n;
  }
  Budget Own(DestinationId id) { return scheduler_.Inspect(id)->budget; }

  FakeClock& clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  RecordingShare share_;
  SchedulerDriver driver_{clock_, scheduler_};
};

class SchedulerSharingTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  Node a_{clock_};
  Node b_{clock_};
};

// Verifies that a limit one node learned from headers is the other node's for the same key, that
// the same headers again publish nothing, and that the other node shows it as learned.
TEST_F(SchedulerSharingTest, LearnedLimitReachesTheOtherNode) {
  const DestinationSpec hook = Spec(Platform::kWebhook, "https://a.example/hook");
  DestinationId on_a = a_.Add(hook);
  DestinationId on_b = b_.Add(hook);
  RateLimitObservation observation;
  observation.limit = 40;
  observation.window = milliseconds(60'000);
  ASSERT_TRUE(a_.scheduler_.Observe(on_a, observation).ok());
  ASSERT_TRUE(a_.scheduler_.Observe(on_a, observation).ok());
  EXPECT_EQ(a_.share_.updates.size(), 1u) << "the same headers again teach nothing new";
  EXPECT_EQ(a_.DeliverTo(b_), 1u);
  EXPECT_EQ(b_.Own(on_b), (Budget{40, 60'000, 1}));
  EXPECT_TRUE(b_.scheduler_.Inspect(on_b)->budget_learned);
  EXPECT_TRUE(b_.share_.updates.empty()) << "what was applied is not published again";
}

// Verifies that a destination added after the update came takes it, until kSharedLearnedTtl.
TEST_F(SchedulerSharingTest, DestinationAddedLaterTakesWhatWasLearned) {
  const DestinationSpec hook = Spec(Platform::kWebhook, "https://a.example/hook");
  DestinationId on_a = a_.Add(hook);
  RateLimitObservation observation;
  observation.limit = 40;
  ASSERT_TRUE(a_.scheduler_.Observe(on_a, observation).ok());
  a_.DeliverTo(b_);
  DestinationId on_b = b_.Add(hook);
  EXPECT_EQ(b_.Own(on_b).limit, 40);
  ASSERT_TRUE(b_.scheduler_.RemoveDestination(on_b).ok());
  clock_.Advance(Scheduler::kSharedLearnedTtl);
  b_.scheduler_.Sweep();
  DestinationId again = b_.Add(hook);
  EXPECT_EQ(b_.Own(again).limit, 50) << "an update older than the TTL no longer applies";
  EXPECT_FALSE(b_.scheduler_.Inspect(again)->budget_learned);
}

// Verifies the adaptive pace: a header-less 429 on one node lowers the key on the other with the
// same hold, so the other node's own 429s from before it do not lower it again; and when the
// pace is back at the configured limit the other node is too.
TEST_F(SchedulerSharingTest, AdaptivePaceIsSharedAndComesBackTogether) {
  const DestinationSpec user = Spec(Platform::kLine, "U1");
  DestinationId on_a = a_.Add(user);
  DestinationId on_b = b_.Add(user);
  const uint64_t in_flight_on_b = b_.Dispatch(on_b);
  a_.Complete(on_a, a_.Dispatch(on_a), Http(429));
  ASSERT_EQ(a_.Own(on_a).limit, 1000);
  ASSERT_EQ(a_.share_.updates.size(), 1u);
  EXPECT_TRUE(a_.share_.updates[0].adaptive);
  EXPECT_EQ(a_.share_.updates[0].hold, milliseconds(250));  // a first window's quarter
  a_.DeliverTo(b_);
  EXPECT_EQ(b_.scheduler_.Inspect(on_b)->adaptive, (Budget{1000, 1000, 1}));
  // b's request sent before the decrease comes back 429 within a's hold: the same decrease.
  clock_.Advance(milliseconds(10));
  b_.Complete(on_b, in_flight_on_b, Http(429));
  EXPECT_EQ(b_.Own(on_b).limit, 1000);
  EXPECT_TRUE(b_.share_.updates.empty());

  // a probes back up to the configured 2,000/s; b follows each step, and ends where a does.
  clock_.Advance(milliseconds(1000));
  for (int i = 0; i < 200 && a_.scheduler_.Inspect(on_a)->adaptive.has_value(); ++i) {
    a_.SendOk(on_a, static_cast<int>(a_.Own(on_a).limit));
    a_.DeliverTo(b_);
    EXPECT_EQ(b_.Own(on_b).limit, a_.Own(on_a).limit);
  }
  ASSERT_FALSE(a_.scheduler_.Inspect(on_a)->adaptive.has_value());
  EXPECT_FALSE(b_.scheduler_.Inspect(on_b)->adaptive.has_value());
  EXPECT_EQ(b_.Own(on_b), (Budget{2000, 1000, 1}));
  EXPECT_FALSE(b_.scheduler_.Inspect(on_b)->budget_learned);
}

// Verifies that a Discord bucket id one node learned keys the other node's destinations of that
// route by the bucket from their start.
TEST_F(SchedulerSharingTest, DiscordBucketIsShared) {
  const DestinationSpec channel = Spec(Platform::kDiscord, "channels/111");
  DestinationId on_a = a_.Add(channel);
  RateLimitObservation observation;
  observation.bucket = "abcd1234";
  observation.limit = 5;
  observation.remaining = 4;
  observation.reset_after = milliseconds(5000);
  observation.window = milliseconds(5000);
  ASSERT_TRUE(a_.scheduler_.Observe(on_a, observation).ok());
  ASSERT_EQ(a_.share_.updates.size(), 2u);
  EXPECT_EQ(a_.share_.updates[0].kind, LearnedUpdate::Kind::kDiscordBucket);
  EXPECT_EQ(a_.share_.updates[1].kind, LearnedUpdate::Kind::kBudget);
  a_.DeliverTo(b_);
  DestinationId on_b = b_.Add(channel);
  const PathScopes scopes_a = *a_.scheduler_.ScopesOf(on_a);
  const PathScopes scopes_b = *b_.scheduler_.ScopesOf(on_b);
  ASSERT_EQ(scopes_a.size, scopes_b.size);
  EXPECT_EQ(scopes_b.scopes[scopes_b.size - 1].key, scopes_a.scopes[scopes_a.size - 1].key);
  EXPECT_EQ(b_.Own(on_b), a_.Own(on_a));
  EXPECT_EQ(b_.Own(on_b), (Budget{5, 5000, 5}));
}

// Verifies that a key in use takes an update once: after this node learned better itself, a
// destination added later on that key does not bring the other node's old word back; and that
// an update's age counts (one older than the TTL is ignored, a hold is what is left of it).
TEST_F(SchedulerSharingTest, AnUpdateIsTakenOnceAndAges) {
  DestinationId on_a = a_.Add(Spec(Platform::kLine, "U1"));
  DestinationId on_b = b_.Add(Spec(Platform::kLine, "U1"));
  a_.Complete(on_a, a_.Dispatch(on_a), Http(429));
  a_.DeliverTo(b_);
  ASSERT_EQ(b_.Own(on_b).limit, 1000);
  clock_.Advance(milliseconds(1000));
  for (int i = 0; i < 200 && b_.scheduler_.Inspect(on_b)->adaptive.has_value(); ++i) {
    b_.SendOk(on_b, static_cast<int>(b_.Own(on_b).limit));
  }
  ASSERT_EQ(b_.Own(on_b).limit, 2000) << "b's own deliveries took it back up";
  DestinationId second_user = b_.Add(Spec(Platform::kLine, "U2"));  // the same channel key
  EXPECT_EQ(b_.Own(second_user).limit, 2000);
  EXPECT_EQ(b_.Own(on_b).limit, 2000);

  DestinationId on_c = b_.Add(Spec(Platform::kLine, "U1", "cred-2"));
  LearnedUpdate old;
  old.key = b_.scheduler_.ScopesOf(on_c)->scopes[b_.scheduler_.ScopesOf(on_c)->size - 1].key;
  old.budget = Budget{10, 1000, 1};
  old.adaptive = true;
  old.hold = milliseconds(5000);
  EXPECT_TRUE(b_.scheduler_.ApplyLearned(old, Scheduler::kSharedLearnedTtl).ok());
  EXPECT_EQ(b_.Own(on_c).limit, 2000) << "older than the TTL";
  EXPECT_EQ(b_.scheduler_.ApplyLearned(old, milliseconds(-1)).code(),
            Status::Code::kInvalidArgument);
  EXPECT_TRUE(b_.scheduler_.ApplyLearned(old, milliseconds(4000)).ok());
  EXPECT_EQ(b_.Own(on_c).limit, 10);
  // 1 s of the 5 s hold is left: a 429 of c's after it lowers the pace again.
  clock_.Advance(milliseconds(1000));
  const uint64_t sent = b_.Dispatch(on_c);
  b_.Complete(on_c, sent, Http(429));
  EXPECT_EQ(b_.Own(on_c).limit, 5);
}

// Verifies that what comes from other nodes is held to the budgets' ranges and to the keys
// responses can teach: anything else is refused or ignored, and changes nothing.
TEST_F(SchedulerSharingTest, HostileUpdatesChangeNothing) {
  DestinationId hook = b_.Add(Spec(Platform::kWebhook, "https://a.example/hook"));
  const PathScopes scopes = *b_.scheduler_.ScopesOf(hook);
  LearnedUpdate bad;
  bad.key = scopes.scopes[scopes.size - 1].key;
  bad.budget = Budget{0, 1000, 1};
  EXPECT_EQ(b_.scheduler_.ApplyLearned(bad).code(), Status::Code::kInvalidArgument);
  bad.budget = Budget{10, 1000, 1};
  bad.adaptive = true;
  bad.hold = milliseconds(3'600'000);
  EXPECT_EQ(b_.scheduler_.ApplyLearned(bad).code(), Status::Code::kInvalidArgument);
  bad.kind = static_cast<LearnedUpdate::Kind>(9);
  EXPECT_EQ(b_.scheduler_.ApplyLearned(bad).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(b_.Own(hook).limit, 50);
  // The tenant's own egress scope is not a key responses teach.
  LearnedUpdate tenant;
  tenant.key = scopes.scopes[0].key;
  tenant.budget = Budget{1, 3'600'000, 1};
  ASSERT_EQ(scopes.scopes[0].name, BudgetName::kTenantEgress);
  EXPECT_TRUE(b_.scheduler_.ApplyLearned(tenant).ok());
  EXPECT_EQ(b_.scheduler_.ScopesOf(hook)->scopes[0].budget, scopes.scopes[0].budget);
  // Memory is bounded: past kMaxSharedLearned keys, updates for new keys are refused.
  LearnedUpdate many;
  many.budget = Budget{10, 1000, 1};
  Status last;
  for (size_t i = 0; i <= Scheduler::kMaxSharedLearned; ++i) {
    many.key = 0x9000'0000'0000'0000ULL + i;
    last = b_.scheduler_.ApplyLearned(many);
  }
  EXPECT_EQ(last.code(), Status::Code::kBusy);
}

}  // namespace
}  // namespace egress::pacing
