// Shard leases of the PostgreSQL store (storage/pg_shard_leases.h) against a real PostgreSQL 15:
// the spread over live nodes, a stopped node's shards claimed after the ttl, a graceful hand-
// over, the wake-up channel, and the fencing of writes as owner by the shard's epoch.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "dispatcher/base/clock.h"
#include "storage/pg_schema.h"
#include "storage/pg_shard_leases.h"
#include "tests/storage/pg_store_fixture.h"

namespace egress::storage {
namespace {

// Short leases, so a test waits seconds, not tens of them.
ShardLeaseOptions Fast(std::string node) {
  return {.node_id = std::move(node),
          .ttl = Millis(1500),
          .renew_every = Millis(200),
          .margin = Millis(300),
          .handoff_timeout = Millis(3000)};
}

// The ids a node's wake-up observer was told, from its listener thread.
class Heard {
 public:
  void Listen(PgShardLeases& leases) {
    leases.SetWakeObserver([this](std::vector<std::string> ids) {
      std::lock_guard<std::mutex> lock(mu_);
      ids_.insert(ids_.end(), ids.begin(), ids.end());
    });
  }
  std::vector<std::string> ids() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_;
  }
  bool Has(const std::string& id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> ids_;
};

class PgShardLeasesTest : public PgStoreTest {
 protected:
  std::unique_ptr<PgShardLeases> Leases(std::string node, std::function<bool(int)> busy = nullptr) {
    if (!busy) {
      busy = [](int) { return false; };
    }
    auto l = PgShardLeases::Start(
        pg_.url, "", Fast(std::move(node)), clock_,
        [](std::string_view key) { return std::string(key); }, std::move(busy));
    EXPECT_TRUE(l.has_value()) << l.error().ToString();
    return l ? std::move(*l) : nullptr;
  }
  // A store of the test's database as node `node` with Fast shard leases.
  Result<std::unique_ptr<QueueStore>> OpenNode(std::string node) {
    PostgresStoreOptions pg = pg_;
    pg.shard_leases = Fast(std::move(node));
    pg.clock = &clock_;
    return OpenPostgresQueueStore(pg, options_, kPgT0);
  }
  // Waits (up to 10 s) until `pred` holds.
  bool WaitFor(const std::function<bool()>& pred) {
    for (int waited = 0; waited < 10'000; waited += 20) {
      if (pred()) {
        return true;
      }
      std::this_thread::sleep_for(Millis(20));
    }
    return pred();
  }
  static std::set<int> Dispatchable(const PgShardLeases& l) {
    std::set<int> out;
    for (int s = 0; s < kPgShards; ++s) {
      if (l.MayDispatch(s)) {
        out.insert(s);
      }
    }
    return out;
  }

  SystemClock clock_;
};

// Verifies that two nodes split the shards by rendezvous hashing, each the shards it is the
// highest-ranked node of, with no shard dispatchable by both, and that the spread is near even.
TEST_F(PgShardLeasesTest, TwoNodesSplitTheShards) {
  auto a = Leases("node-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->held_count(), kPgShards);  // alone at first: every shard
  auto b = Leases("node-b");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    return a->held_count() + b->held_count() == kPgShards && b->held_count() > 0;
  })) << a->held_count()
      << " + " << b->held_count();
  const std::vector<std::string> nodes = {"node-a", "node-b"};
  for (int s = 0; s < kPgShards; ++s) {
    const bool a_owns = *PgShardLeases::RendezvousOwner(nodes, s) == "node-a";
    EXPECT_EQ(a->MayDispatch(s), a_owns) << s;
    EXPECT_EQ(b->MayDispatch(s), !a_owns) << s;
  }
  EXPECT_GT(a->held_count(), 90);
  EXPECT_GT(b->held_count(), 90);
  // The database agrees: every shard names one of them, with an epoch.
  auto raw = Raw();
  auto rows = raw->Exec(
      "SELECT count(*)::int8 FROM egress_shards WHERE owner IN ('node-a', 'node-b') "
      "AND expires_at > now() AND epoch > 0");
  ASSERT_TRUE(rows.has_value()) << rows.error().ToString();
  EXPECT_EQ(rows->Int(0, 0), kPgShards);
}

// Verifies that when a node stops renewing (its threads stopped without releasing, as a paused
// or partitioned node), the other claims its shards only after the ttl, with a new epoch each;
// and that a node stopped gracefully releases its shards for the other to claim at once.
TEST_F(PgShardLeasesTest, ShardsOfASilentNodeAreClaimedAfterTheTtlAndAStoppedOnesAtOnce) {
  auto a = Leases("node-a");
  auto b = Leases("node-b");
  ASSERT_TRUE(WaitFor(
      [&] { return a->held_count() + b->held_count() == kPgShards && b->held_count() > 0; }));
  const std::set<int> a_shards = Dispatchable(*a);
  const int some = *a_shards.begin();
  const int64_t epoch = *a->EpochOf(some);
  // Silence: A's heartbeat and renewals stop (its row is left as it was) while the process
  // lives. Simulated by taking the leases' rows from its point of view: nobody renews them.
  auto raw = Raw();
  a.reset();  // a graceful Stop: releases
  const SteadyTime released = clock_.Now();
  ASSERT_TRUE(WaitFor([&] { return b->held_count() == kPgShards; }));
  // Released: claimed within a few renew periods, not a ttl.
  EXPECT_LT(clock_.Now() - released, Millis(1400));
  EXPECT_GT(*b->EpochOf(some), epoch);

  // Now a node that goes silent without releasing: its row stays until it expires.
  auto c = Leases("node-c");
  ASSERT_TRUE(WaitFor(
      [&] { return c->held_count() > 0 && b->held_count() + c->held_count() == kPgShards; }));
  const std::set<int> c_shards = Dispatchable(*c);
  // Make C silent: its leases are extended in the database by hand as its last renewal would,
  // then C's object is dropped without its release (the rows keep naming node-c).
  ASSERT_TRUE(raw->Run("UPDATE egress_nodes SET expires_at = now() + interval '1500 ms' "
                       "WHERE node_id = 'node-c'")
                  .ok());
  c.reset();  // releases, so put its leases back as they were: owner node-c, unexpired
  std::string list;
  for (int s : c_shards) {
    list += (list.empty() ? "" : ",") + std::to_string(s);
  }
  ASSERT_TRUE(raw->Run("UPDATE egress_shards SET owner = 'node-c', expires_at = now() + "
                       "interval '1500 ms' WHERE shard IN (" +
                       list + ")")
                  .ok());
  ASSERT_TRUE(raw->Run("INSERT INTO egress_nodes (node_id, expires_at) VALUES ('node-c', now() + "
                       "interval '1500 ms') ON CONFLICT (node_id) DO UPDATE SET expires_at = "
                       "excluded.expires_at")
                  .ok());
  const SteadyTime silent = clock_.Now();
  std::this_thread::sleep_for(Millis(600));
  for (int s : c_shards) {
    EXPECT_FALSE(b->MayDispatch(s)) << "claimed before its lease expired: " << s;
  }
  ASSERT_TRUE(WaitFor([&] { return b->held_count() == kPgShards; }));
  EXPECT_GE(clock_.Now() - silent, Millis(1400));
}

// Verifies the hand-over to a joining node waits for the shard's work in flight: a shard the
// old owner says is busy stays with it (neither node dispatching it meanwhile) until it is not.
TEST_F(PgShardLeasesTest, AHandoverWaitsForWorkInFlight) {
  std::atomic<int> busy_shard{-1};
  auto a = Leases("node-a", [&](int s) { return s == busy_shard.load(); });
  const std::vector<std::string> nodes = {"node-a", "node-b"};
  int moving = -1;
  for (int s = 0; s < kPgShards && moving < 0; ++s) {
    if (*PgShardLeases::RendezvousOwner(nodes, s) == "node-b") {
      moving = s;
    }
  }
  ASSERT_GE(moving, 0);
  busy_shard = moving;
  auto b = Leases("node-b");
  ASSERT_TRUE(WaitFor([&] { return !a->MayDispatch(moving); }));
  std::this_thread::sleep_for(Millis(800));
  EXPECT_FALSE(b->MayDispatch(moving)) << "taken while the old owner had it in flight";
  EXPECT_TRUE(a->EpochOf(moving).has_value());  // still held: its writes still go through
  busy_shard = -1;
  ASSERT_TRUE(WaitFor([&] { return b->MayDispatch(moving); }));
  EXPECT_FALSE(a->EpochOf(moving).has_value());
}

// Verifies the wake-up channel: a delivery enqueued through a store whose node does not own its
// shard is announced to the listening nodes with its id.
TEST_F(PgShardLeasesTest, EnqueueForAnotherNodesShardWakesIt) {
  Heard heard;  // outlives the leases, whose listener thread tells it
  auto owner = Leases("node-owner");
  heard.Listen(*owner);
  // A second node's store: it joins, so it owns some shards and not others.
  auto intake = OpenNode("node-intake");
  ASSERT_TRUE(intake.has_value()) << intake.error().ToString();
  ShardOwnership* own = (*intake)->ownership();
  ASSERT_NE(own, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    return owner->held_count() + own->held_count() == kPgShards && own->held_count() > 0 &&
           owner->held_count() > 0;
  }));
  std::string foreign, local;
  for (int i = 0; i < 200 && (foreign.empty() || local.empty()); ++i) {
    const std::string channel = "C" + std::to_string(i);
    const bool mine =
        own->MayDispatch(own->ShardOf(DestinationKeyOf("slack", "acme", "bot", channel)));
    auto r = (*intake)->Enqueue(PgSlack(channel), kPgT0);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    std::string& slot = mine ? local : foreign;
    if (slot.empty()) {
      slot = r->id;
    }
  }
  ASSERT_FALSE(foreign.empty());
  ASSERT_FALSE(local.empty());
  ASSERT_TRUE(WaitFor([&] { return heard.Has(foreign); }));
  EXPECT_FALSE(heard.Has(local)) << "a delivery of the intake node's own shard needs no wake-up";
}

// Verifies that wake-up entries from any session of the database are checked: one whose id is
// no delivery id, or whose shard is no number or not this node's, is dropped; a good one in the
// same payload is heard.
TEST_F(PgShardLeasesTest, AWakeUpEntryThatIsNoDeliveryIdIsDropped) {
  Heard heard;
  auto owner = Leases("node-owner");
  heard.Listen(*owner);
  ASSERT_TRUE(WaitFor([&] { return owner->held_count() == kPgShards; }));
  const std::string good = MustEnqueue(PgSlack("C1"));
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  const std::string payload =
      "7/not an id,7/01\u00fc\u00fcJ,x/" + good + ",999/" + good + ",7/" + good;
  ASSERT_TRUE(
      raw->Exec("SELECT pg_notify('egress_wake', $1)", PgParams().Text(payload)).has_value());
  ASSERT_TRUE(WaitFor([&] { return !heard.ids().empty(); }));
  std::this_thread::sleep_for(Millis(300));  // anything else of that payload would be in too
  EXPECT_EQ(heard.ids(), std::vector<std::string>{good});
}

// Verifies the fencing: a store's write as owner goes through while its node holds the shard's
// epoch, and once another node claimed the shard (epoch + 1) its lease's outcome is Rejected,
// the lease dropped and the stored version kept; a lease as owner of a shard the node may not
// dispatch is Unavailable; an operator's change (not as owner) applies on any node.
TEST_F(PgShardLeasesTest, WritesAsOwnerAreFencedByTheEpoch) {
  auto a = OpenNode("node-a");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  QueueStore& store = **a;
  const std::string first = MustEnqueue(PgSlack("C1"));
  const std::string second = MustEnqueue(PgSlack("C1"));
  const int shard = store.ownership()->ShardOf(DestinationKeyOf("slack", "acme", "bot", "C1"));
  ASSERT_TRUE(store.ownership()->MayDispatch(shard));
  const StateChange lease{.to = DeliveryState::kInFlight, .at_ms = kPgT0 + 1, .as_owner = true};
  auto leased = store.Apply(first, lease);
  ASSERT_TRUE(leased.has_value()) << leased.error().ToString();
  // Another node claims the shard (as its leases would after A's expired).
  auto raw = Raw();
  ASSERT_TRUE(raw->Run("UPDATE egress_shards SET owner = 'node-z', epoch = epoch + 1, expires_at = "
                       "now() + interval '1 hour' WHERE shard = " +
                       std::to_string(shard))
                  .ok());
  const StateChange delivered{
      .to = DeliveryState::kDelivered, .at_ms = kPgT0 + 2, .as_owner = true};
  auto refused = store.Apply(first, delivered);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kRejected) << refused.error().ToString();
  EXPECT_EQ(store.Get(first)->state, DeliveryState::kQueued);  // the lease is gone
  // A's renewal finds the epoch moved: the shard is not A's to dispatch any more.
  ASSERT_TRUE(WaitFor([&] { return !store.ownership()->MayDispatch(shard); }));
  auto no_lease = store.Apply(second, lease);
  ASSERT_FALSE(no_lease.has_value());
  EXPECT_EQ(no_lease.error().code(), Status::Code::kRejected) << no_lease.error().ToString();
  // An operator's cancel on A still applies.
  auto cancelled =
      store.Apply(second, StateChange{.to = DeliveryState::kCancelled, .at_ms = kPgT0 + 3});
  ASSERT_TRUE(cancelled.has_value()) << cancelled.error().ToString();
  // And the batch form: one fenced change among others does not stop them.
  const std::string third = MustEnqueue(PgSlack("C1"));
  auto batch = store.ApplyBatch(
      {{third, lease}, {first, StateChange{.to = DeliveryState::kCancelled, .at_ms = kPgT0 + 4}}});
  ASSERT_TRUE(batch.has_value()) << batch.error().ToString();
  EXPECT_FALSE((*batch)[0].has_value());
  EXPECT_TRUE((*batch)[1].has_value());
  EXPECT_EQ(store.Get(first)->state, DeliveryState::kCancelled);
}

// Verifies quotas are the cluster's: a charge made through another node's store is counted by
// this node's QuotaUsage within a round of the leases (a second in service; 200 ms here), as is
// its release.
TEST_F(PgShardLeasesTest, QuotaChargesOfAnotherNodeAreCountedWithinARound) {
  auto a = OpenNode("node-a");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  const pacing::WindowShape shape = pacing::WindowShape::Of(100'000);
  NewDelivery d = PgSlack("C1");
  d.cost = 4;
  d.charges.push_back(
      QuotaCharge{"monthly", shape.window_ms, shape.slice_ms, shape.ExpiryOf(kPgT0), 4});
  auto used = [&] { return (*a)->QuotaUsage("acme", "monthly", kPgT0 + 1).Used(kPgT0 + 1); };
  EXPECT_EQ(used(), 0);
  const std::string id = MustEnqueue(d);  // through the fixture's store: another node
  EXPECT_TRUE(WaitFor([&] { return used() == 4; })) << used();
  MustApply(id, StateChange{.to = DeliveryState::kCancelled, .at_ms = kPgT0 + 2});
  EXPECT_TRUE(WaitFor([&] { return used() == 0; })) << used();
}

// Verifies a lease that lapsed by the node's own clock (its renewals held up longer than the ttl
// less the margin) stops dispatch, and that its renewal afterwards tells the ownership observer,
// so the loop reads again what it forgot meanwhile (a shard neither lost nor claimed).
TEST_F(PgShardLeasesTest, ALapsedLeaseRenewedAgainTellsTheObserver) {
  auto a = Leases("node-a");
  ASSERT_EQ(a->held_count(), kPgShards);
  std::atomic<int> told{0};
  a->SetOwnershipObserver([&] { ++told; });
  // The heartbeat's row locked by another session: the next round waits on it.
  auto raw = Raw();
  ASSERT_TRUE(
      raw->Run("BEGIN; SELECT * FROM egress_nodes WHERE node_id = 'node-a' FOR UPDATE").ok());
  ASSERT_TRUE(WaitFor([&] { return a->held_count() == 0; })) << "dispatch goes on past the lease";
  const int before = told.load();
  ASSERT_TRUE(raw->Run("COMMIT").ok());
  ASSERT_TRUE(WaitFor([&] { return a->held_count() == kPgShards && told.load() > before; }))
      << a->held_count() << " held, told " << told.load() << " times";
}

}  // namespace
}  // namespace egress::storage
