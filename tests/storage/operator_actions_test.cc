#include "storage/operator_actions.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/rocks_queue_store.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {
namespace {

constexpr int64_t kT0 = 1'767'225'600'000;
constexpr int64_t kLater = kT0 + 60'000;

NewDelivery Slack(std::string tenant, std::string channel) {
  NewDelivery d;
  d.tenant = std::move(tenant);
  d.platform = "slack";
  d.destination = std::move(channel);
  d.credential = "bot";
  d.payload = R"({"text":"hello"})";
  return d;
}

class OperatorActionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = OpenRocksQueueStore({.path = dir_.Sub("store")}, kT0);
    ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
    store_ = std::move(*opened);
  }

  std::string Enqueue(const std::string& tenant = "acme") {
    auto r = store_->Enqueue(Slack(tenant, "C1"), kT0);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.has_value() ? r->id : "";
  }

  // A delivery that failed once (one attempt counted) and died.
  std::string Dead(const std::string& tenant = "acme") {
    const std::string id = Enqueue(tenant);
    EXPECT_TRUE(store_->Apply(id, {.to = DeliveryState::kInFlight, .at_ms = kT0}));
    StateChange die{.to = DeliveryState::kDead, .at_ms = kT0, .reason = "http_404"};
    die.attempt = Attempt{.at_ms = kT0, .http_status = 404};
    die.consume_attempt = true;
    EXPECT_TRUE(store_->Apply(id, die));
    return id;
  }

  // Many dead ones in two writes.
  std::vector<std::string> ManyDead(size_t n) {
    auto stored = store_->EnqueueBatch(std::vector<NewDelivery>(n, Slack("acme", "C1")), kT0);
    EXPECT_TRUE(stored.has_value());
    std::vector<std::string> ids;
    std::vector<QueueStore::IdChange> changes;
    for (const auto& r : *stored) {
      ids.push_back(r->id);
      changes.push_back({r->id, {.to = DeliveryState::kDead, .at_ms = kT0, .reason = "x"}});
    }
    EXPECT_TRUE(store_->ApplyBatch(changes).has_value());
    return ids;
  }

  // Due a minute from now because of a rate limit.
  std::string Deferred(const std::string& tenant = "acme") {
    const std::string id = Enqueue(tenant);
    EXPECT_TRUE(store_->Apply(id, {.to = DeliveryState::kDeferred,
                                   .at_ms = kT0,
                                   .next_attempt_ms = kLater,
                                   .reason = "retry_after"}));
    return id;
  }

  std::string Delivered() {
    const std::string id = Enqueue();
    EXPECT_TRUE(store_->Apply(id, {.to = DeliveryState::kInFlight, .at_ms = kT0}));
    EXPECT_TRUE(store_->Apply(id, {.to = DeliveryState::kDelivered, .at_ms = kT0}));
    return id;
  }

  DeliveryState StateOf(const std::string& id) { return store_->Get(id)->state; }

  uint64_t Count(DeliveryState state) { return CountOf(*store_->Counts(), state); }

  TempDir dir_;
  std::unique_ptr<QueueStore> store_;
};

// Verifies that a dead delivery comes back queued, due now, with its attempts reset.
TEST_F(OperatorActionsTest, ReplaysDeadWithAttemptsReset) {
  const std::string id = Dead();
  ASSERT_EQ(store_->Get(id)->attempts, 1u);
  auto r = ReplayOne(*store_, id, kLater);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->state, DeliveryState::kQueued);
  EXPECT_EQ(r->attempts, 0u);
  EXPECT_EQ(r->next_attempt_ms, kLater);
  EXPECT_EQ(*store_->Get(id), *r);
}

// Verifies that a deferred delivery becomes due now and keeps its attempt count.
TEST_F(OperatorActionsTest, ReplaysDeferredDueNow) {
  const std::string id = Deferred();
  auto r = ReplayOne(*store_, id, kT0 + 5);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->state, DeliveryState::kQueued);
  EXPECT_EQ(r->next_attempt_ms, kT0 + 5);
  EXPECT_TRUE(r->reason.empty());
}

// Verifies the refusal of a delivered one: FailedPrecondition with the API's text, no change.
TEST_F(OperatorActionsTest, RefusesToReplayDelivered) {
  const std::string id = Delivered();
  auto r = ReplayOne(*store_, id, kLater);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), Status::FailedPrecondition(
                           "delivery " + id +
                           " is delivered; only dead and deferred deliveries can be replayed"));
  EXPECT_EQ(StateOf(id), DeliveryState::kDelivered);
  EXPECT_FALSE(ReplayOne(*store_, Enqueue(), kLater).has_value());  // queued: nothing to replay
}

// Verifies that replay and cancel of an id the store does not hold answer NotFound.
TEST_F(OperatorActionsTest, UnknownIdIsNotFound) {
  const std::string unknown = "01KAAAAAAAAAAAAAAAAAAAAAAA";
  EXPECT_EQ(ReplayOne(*store_, unknown, kT0).error().code(), Status::Code::kNotFound);
  EXPECT_EQ(Cancel(*store_, unknown, kT0).error().code(), Status::Code::kNotFound);
}

// Verifies that a dry run counts the matches of the filter and writes nothing.
TEST_F(OperatorActionsTest, ReplayMatchingDryRunChangesNothing) {
  Dead();
  Dead();
  Dead("beta");
  Deferred();
  int told = 0;
  auto r = ReplayMatching(*store_, {.state = DeliveryState::kDead}, true, kLater,
                          [&told](Delivery&&) { ++told; });
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->matched, 3u);
  EXPECT_EQ(r->replayed, 0u);
  EXPECT_EQ(told, 0);
  EXPECT_EQ(Count(DeliveryState::kDead), 3u);
}

// Verifies that a replay takes only what the filter matches after its cursor, reports each
// replayed one, and ends done with the cursor at the last one it looked at.
TEST_F(OperatorActionsTest, ReplayMatchingReplaysTheFilteredOnes) {
  const std::string a = Dead();
  const std::string b = Dead("beta");
  const std::string c = Dead();
  const std::string d = Dead();
  Deferred();
  std::vector<std::string> told;
  // The filter's page size is ignored; its cursor is where the replay starts.
  ListFilter f{.state = DeliveryState::kDead, .tenant = "acme", .after_id = a, .limit = 1};
  auto r =
      ReplayMatching(*store_, f, false, kLater, [&told](Delivery&& x) { told.push_back(x.id); });
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->matched, 2u);
  EXPECT_EQ(r->replayed, 2u);
  EXPECT_TRUE(r->done);
  EXPECT_EQ(r->cursor, d);
  EXPECT_EQ(told, (std::vector<std::string>{c, d}));
  EXPECT_EQ(StateOf(a), DeliveryState::kDead);
  EXPECT_EQ(StateOf(b), DeliveryState::kDead);
  EXPECT_EQ(StateOf(c), DeliveryState::kQueued);
  EXPECT_EQ(StateOf(d), DeliveryState::kQueued);
  EXPECT_EQ(Count(DeliveryState::kDeferred), 1u);
}

// Verifies that slices chained through the cursor cover every match exactly once, across page
// boundaries, and that the last one says done.
TEST_F(OperatorActionsTest, ReplayMatchingSlicesCoverEveryMatchOnce) {
  const std::vector<std::string> ids = ManyDead(2'345);
  ListFilter dead{.state = DeliveryState::kDead};
  std::vector<std::string> told;
  size_t slices = 0;
  size_t matched = 0;
  for (;;) {
    ASSERT_LT(slices, 10u) << "the slices do not end";
    auto r = ReplayMatching(
        *store_, dead, false, kLater, [&told](Delivery&& d) { told.push_back(d.id); }, 1'000);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    ++slices;
    matched += r->matched;
    EXPECT_LE(r->matched, 1'000u);
    EXPECT_EQ(r->replayed, r->matched);
    dead.after_id = r->cursor;
    if (r->done) {
      break;
    }
  }
  EXPECT_EQ(slices, 3u);
  EXPECT_EQ(matched, ids.size());
  EXPECT_EQ(told, ids);  // ManyDead's ids come in id order
  EXPECT_EQ(Count(DeliveryState::kQueued), ids.size());
  EXPECT_EQ(Count(DeliveryState::kDead), 0u);
}

// Verifies that a delivery that cannot be replayed when its turn comes (another actor replayed
// it first), and one that dies again right after its replay, are each looked at once: the cursor
// moves past them and the slices end.
TEST_F(OperatorActionsTest, ReplayMatchingDoesNotLoopOnFailuresOrRedeaths) {
  const std::vector<std::string> ids = ManyDead(6);
  std::vector<std::string> told;
  auto on_replayed = [&](Delivery&& d) {
    told.push_back(d.id);
    if (d.id == ids[0]) {
      // Someone else replays ids[1] before the page gets to it.
      EXPECT_TRUE(ReplayOne(*store_, ids[1], kLater).has_value());
      // And ids[0] fails again at once: dead again, behind the cursor.
      EXPECT_TRUE(store_->Apply(d.id, {.to = DeliveryState::kInFlight, .at_ms = kLater}));
      StateChange die{.to = DeliveryState::kDead, .at_ms = kLater, .reason = "http_404"};
      die.attempt = Attempt{.at_ms = kLater, .http_status = 404};
      die.consume_attempt = true;
      auto died = store_->Apply(d.id, die);
      EXPECT_TRUE(died.has_value()) << died.error().ToString();
    }
  };
  ListFilter dead{.state = DeliveryState::kDead};
  size_t matched = 0;
  size_t replayed = 0;
  for (size_t slices = 0;; ++slices) {
    ASSERT_LT(slices, 10u) << "the slices do not end";
    auto r = ReplayMatching(*store_, dead, false, kLater, on_replayed, 2);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    matched += r->matched;
    replayed += r->replayed;
    dead.after_id = r->cursor;
    if (r->done) {
      break;
    }
  }
  EXPECT_EQ(matched, 6u);
  EXPECT_EQ(replayed, 5u);  // ids[1] was not this replay's to do
  EXPECT_EQ(told, (std::vector<std::string>{ids[0], ids[2], ids[3], ids[4], ids[5]}));
  EXPECT_EQ(StateOf(ids[0]), DeliveryState::kDead);  // left for a new run
  EXPECT_EQ(Count(DeliveryState::kQueued), 5u);
}

// Verifies the cap: one call replays no more than `max` matches, and the next call takes the
// rest.
TEST_F(OperatorActionsTest, ReplayMatchingStopsAtTheCap) {
  ManyDead(5);
  const ListFilter dead{.state = DeliveryState::kDead};
  int told = 0;
  auto first = ReplayMatching(
      *store_, dead, false, kLater, [&told](Delivery&&) { ++told; }, 3);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->matched, 3u);
  EXPECT_EQ(first->replayed, 3u);
  EXPECT_EQ(told, 3);
  EXPECT_EQ(Count(DeliveryState::kDead), 2u);
  EXPECT_FALSE(first->done);
  // The next call may start over (replayed ones no longer match) or continue at the cursor.
  auto rest = ReplayMatching(*store_, dead, false, kLater, nullptr, 3);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->matched, 2u);
  EXPECT_EQ(rest->replayed, 2u);
  EXPECT_TRUE(rest->done);
  EXPECT_EQ(Count(DeliveryState::kQueued), 5u);
  EXPECT_EQ(kMaxReplayPerCall, 100'000u);
}

// Verifies that matches are counted across pages of the store's list, up to the cap.
TEST_F(OperatorActionsTest, ReplayMatchingCountsAcrossPages) {
  ManyDead(1005);
  const ListFilter dead{.state = DeliveryState::kDead};
  auto capped = ReplayMatching(*store_, dead, true, kLater, nullptr, 1002);
  ASSERT_TRUE(capped.has_value()) << capped.error().ToString();
  EXPECT_EQ(capped->matched, 1002u);
  auto all = ReplayMatching(*store_, dead, true, kLater);
  ASSERT_TRUE(all.has_value()) << all.error().ToString();
  EXPECT_EQ(all->matched, 1005u);
  EXPECT_EQ(all->replayed, 0u);
}

// Verifies that a replay filter on any state but dead or deferred is InvalidArgument.
TEST_F(OperatorActionsTest, ReplayMatchingRefusesOtherStates) {
  Enqueue();
  for (std::optional<DeliveryState> state :
       {std::optional<DeliveryState>(), std::optional(DeliveryState::kQueued),
        std::optional(DeliveryState::kDelivered)}) {
    auto r = ReplayMatching(*store_, {.state = state}, false, kLater);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), Status::InvalidArgument("state: must be dead or deferred"));
  }
  EXPECT_EQ(Count(DeliveryState::kQueued), 1u);
}

// Verifies that queued and deferred deliveries are cancelled and say when.
TEST_F(OperatorActionsTest, CancelsQueuedAndDeferred) {
  for (const std::string& id : {Enqueue(), Deferred()}) {
    auto r = Cancel(*store_, id, kLater);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->state, DeliveryState::kCancelled);
    EXPECT_EQ(r->finished_ms, kLater);
    EXPECT_EQ(StateOf(id), DeliveryState::kCancelled);
  }
}

// Verifies the refusal to cancel in-flight, dead, delivered and cancelled ones, with the API's
// text, and that nothing changes.
TEST_F(OperatorActionsTest, RefusesToCancelOthers) {
  const std::string in_flight = Enqueue();
  ASSERT_TRUE(store_->Apply(in_flight, {.to = DeliveryState::kInFlight, .at_ms = kT0}));
  const std::string cancelled = Enqueue();
  ASSERT_TRUE(Cancel(*store_, cancelled, kT0));
  for (const std::string& id : {in_flight, Dead(), Delivered(), cancelled}) {
    const DeliveryState before = StateOf(id);
    auto r = Cancel(*store_, id, kLater);
    ASSERT_FALSE(r.has_value()) << id;
    EXPECT_EQ(r.error(), Status::FailedPrecondition(
                             "delivery " + id + " is " + std::string(StateName(before)) +
                             "; only queued and deferred deliveries can be cancelled"));
    EXPECT_EQ(StateOf(id), before);
  }
}

// Verifies which states the checks admit, as the CLI's dry run uses them.
TEST(OperatorChecksTest, AdmitOnlyTheirStates) {
  for (DeliveryState state : kAllStates) {
    const bool replayable = state == DeliveryState::kDead || state == DeliveryState::kDeferred;
    EXPECT_EQ(CheckReplayable("x", state).ok(), replayable) << StateName(state);
    EXPECT_EQ(CheckCancellable("x", state).ok(), IsWaiting(state)) << StateName(state);
  }
  EXPECT_EQ(CheckReplayable("x", DeliveryState::kQueued).code(), Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace egress::storage
