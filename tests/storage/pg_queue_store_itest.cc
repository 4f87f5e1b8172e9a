// The PostgreSQL QueueStore against a real PostgreSQL 15, each test on a database of its own:
// every method of the contract, with the RocksDB store's semantics.

#include <gtest/gtest.h>

#include "dispatcher/pacing/sliding_window_counter.h"
#include "storage/pg_queue_store.h"
#include "tests/storage/pg_store_fixture.h"

namespace egress::storage {
namespace {

StateChange To(DeliveryState to, int64_t at_ms, std::string reason = "") {
  StateChange c{.to = to, .at_ms = at_ms};
  c.reason = std::move(reason);
  return c;
}

// Verifies that an enqueue stores every field, that a repeated idempotency key (also within one
// batch) answers the first id with created = false, and that a bad item fails alone.
TEST_F(PgStoreTest, PostgresEnqueueStoresAndKeysAreIdempotent) {
  NewDelivery d = PgSlack("C1", "key-1");
  d.ordering_key = "o1";
  d.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  auto first = store_->Enqueue(d, kPgT0);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_TRUE(first->created);
  auto got = store_->Get(first->id);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  EXPECT_EQ(got->destination, "C1");
  EXPECT_EQ(got->ordering_key, "o1");
  EXPECT_EQ(got->traceparent, d.traceparent);
  EXPECT_EQ(got->state, DeliveryState::kQueued);
  EXPECT_EQ(got->created_ms, kPgT0);

  auto again = store_->Enqueue(d, kPgT0 + 5);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->id, first->id);

  NewDelivery bad = PgSlack("");
  auto batch = store_->EnqueueBatch({PgSlack("C2", "k2"), bad, PgSlack("C2", "k2"), d}, kPgT0);
  ASSERT_TRUE(batch.has_value()) << batch.error().ToString();
  ASSERT_EQ(batch->size(), 4u);
  ASSERT_TRUE((*batch)[0].has_value());
  EXPECT_TRUE((*batch)[0]->created);
  EXPECT_FALSE((*batch)[1].has_value());
  EXPECT_EQ((*batch)[1].error().code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE((*batch)[2].has_value());
  EXPECT_EQ((*batch)[2]->id, (*batch)[0]->id);
  EXPECT_FALSE((*batch)[2]->created);
  ASSERT_TRUE((*batch)[3].has_value());
  EXPECT_EQ((*batch)[3]->id, first->id);
  EXPECT_FALSE((*batch)[3]->created);
  auto counts = store_->Counts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(CountOf(*counts, DeliveryState::kQueued), 2u);
  EXPECT_EQ(store_->Get("01NOTANID0000000000000000").error().code(), Status::Code::kNotFound);
}

// Verifies the state machine through Apply and ApplyBatch: a lease is seen by every read, an
// illegal move is FailedPrecondition, a later change in a batch sees the earlier one, and the
// counters (per state, tenant backlog, destination, tenant and platform) stay exact.
TEST_F(PgStoreTest, PostgresApplyMovesStatesAndCounters) {
  const std::string a = MustEnqueue(PgSlack("C1"));
  const std::string b = MustEnqueue(PgSlack("C1"));
  const std::string c = MustEnqueue(PgSlack("C2"));
  Delivery leased = MustApply(a, To(DeliveryState::kInFlight, kPgT0 + 1));
  EXPECT_EQ(leased.state, DeliveryState::kInFlight);
  EXPECT_EQ(store_->Get(a)->state, DeliveryState::kInFlight);
  ExpectCountsMatchScan();
  auto cancel = store_->Apply(a, To(DeliveryState::kCancelled, kPgT0 + 2));
  ASSERT_FALSE(cancel.has_value());
  EXPECT_EQ(cancel.error().code(), Status::Code::kFailedPrecondition);

  StateChange defer = To(DeliveryState::kDeferred, kPgT0 + 3, "retry_after");
  defer.next_attempt_ms = kPgT0 + 1'000;
  auto batch = store_->ApplyBatch({{a, To(DeliveryState::kDelivered, kPgT0 + 3)},
                                   {b, To(DeliveryState::kInFlight, kPgT0 + 3)},
                                   {b, defer},
                                   {c, To(DeliveryState::kDelivered, kPgT0 + 3)},
                                   {"01NOTANID0000000000000000", defer}});
  ASSERT_TRUE(batch.has_value()) << batch.error().ToString();
  EXPECT_TRUE((*batch)[0].has_value());
  EXPECT_TRUE((*batch)[2].has_value());
  EXPECT_EQ((*batch)[2]->reason, "retry_after");
  EXPECT_EQ((*batch)[3].error().code(), Status::Code::kFailedPrecondition);  // queued->delivered
  EXPECT_EQ((*batch)[4].error().code(), Status::Code::kNotFound);
  EXPECT_EQ(store_->Get(b)->next_attempt_ms, kPgT0 + 1'000);
  ExpectCountsMatchScan();
  auto counts = store_->Counts();
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDelivered), 1u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDeferred), 1u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kQueued), 1u);
  EXPECT_EQ(*store_->TenantBacklog("acme"), 2u);
  EXPECT_EQ(*store_->TenantBacklog("other"), 0u);
  auto dests = store_->DestinationCounts({DestinationKeyOf("slack", "acme", "bot", "C1"),
                                          DestinationKeyOf("slack", "acme", "bot", "C2")});
  ASSERT_TRUE(dests.has_value());
  EXPECT_EQ(CountOf((*dests)[0], DeliveryState::kDeferred), 1u);
  EXPECT_EQ(CountOf((*dests)[0], DeliveryState::kQueued), 0u);
  EXPECT_EQ(CountOf((*dests)[1], DeliveryState::kQueued), 1u);
  // A lease counts as in flight in every counter.
  MustApply(c, To(DeliveryState::kInFlight, kPgT0 + 4));
  auto groups = store_->BacklogByTenantPlatform();
  ASSERT_TRUE(groups.has_value());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].tenant, "acme");
  EXPECT_EQ((*groups)[0].platform, "slack");
  EXPECT_EQ(CountOf((*groups)[0].counts, DeliveryState::kInFlight), 1u);
  EXPECT_EQ(CountOf((*groups)[0].counts, DeliveryState::kDeferred), 1u);
  ExpectCountsMatchScan();
}

// Verifies that a batch of leases alone locks no row (a row lock would write the locker into the
// row's xmax and cost a WAL flush at its commit), and that the outcome after it is written.
TEST_F(PgStoreTest, PostgresALeaseAloneLocksNoRow) {
  const std::string a = MustEnqueue(PgSlack("C1"));
  const std::string b = MustEnqueue(PgSlack("C1"));
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  auto xmax = [&](const std::string& id) {
    auto r =
        raw->Exec("SELECT xmax::text FROM egress_deliveries WHERE id = $1", PgParams().Text(id));
    EXPECT_TRUE(r.has_value() && r->rows() == 1);
    return r.has_value() && r->rows() == 1 ? std::string(r->Bytes(0, 0)) : std::string("?");
  };
  auto leases = store_->ApplyBatch(
      {{a, To(DeliveryState::kInFlight, kPgT0 + 1)}, {b, To(DeliveryState::kInFlight, kPgT0 + 1)}});
  ASSERT_TRUE(leases.has_value()) << leases.error().ToString();
  EXPECT_TRUE((*leases)[0].has_value() && (*leases)[1].has_value());
  EXPECT_EQ(xmax(a), "0");
  EXPECT_EQ(xmax(b), "0");
  MustApply(a, To(DeliveryState::kDelivered, kPgT0 + 2));
  EXPECT_EQ(store_->Get(a)->state, DeliveryState::kDelivered);
  EXPECT_EQ(store_->Get(b)->state, DeliveryState::kInFlight);  // the lease, in memory only
  ExpectCountsMatchScan();
}

// Verifies that LeaseDue takes waiting deliveries in due order (deferred ones by their time,
// not before it), skips leased ones, and that a lease ends as the delivery's next change.
TEST_F(PgStoreTest, PostgresLeaseDueTakesWaitingWorkInDueOrder) {
  const std::string q1 = MustEnqueue(PgSlack("C1"), kPgT0 + 10);
  const std::string d1 = MustEnqueue(PgSlack("C2"), kPgT0);
  const std::string d2 = MustEnqueue(PgSlack("C3"), kPgT0);
  StateChange late = To(DeliveryState::kDeferred, kPgT0 + 1, "budget:x");
  late.next_attempt_ms = kPgT0 + 5'000;
  StateChange early = late;
  early.next_attempt_ms = kPgT0 + 5;
  MustApply(d1, late);
  MustApply(d2, early);
  auto first = store_->LeaseDue(kPgT0 + 100, 10);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].id, d2);  // due at +5
  EXPECT_EQ((*first)[1].id, q1);  // due at +10
  EXPECT_EQ((*first)[0].state, DeliveryState::kInFlight);
  auto none = store_->LeaseDue(kPgT0 + 100, 10);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
  auto later = store_->LeaseDue(kPgT0 + 5'000, 10);
  ASSERT_TRUE(later.has_value());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].id, d1);
  auto in_flight = store_->List(ListFilter{.state = DeliveryState::kInFlight});
  ASSERT_TRUE(in_flight.has_value());
  EXPECT_EQ(in_flight->deliveries.size(), 3u);
  MustApply(q1, To(DeliveryState::kDelivered, kPgT0 + 6'000));
  ExpectCountsMatchScan();
  EXPECT_EQ(store_->Get(q1)->state, DeliveryState::kDelivered);
}

// Verifies per-destination order: PendingFor answers a destination's live work in enqueue order
// from a cursor, and ListDestinations lists destinations with live work in key order.
TEST_F(PgStoreTest, PostgresPendingForKeepsEnqueueOrder) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(MustEnqueue(PgSlack("C1"), kPgT0 + i));
    MustEnqueue(PgSlack("C0"), kPgT0 + i);
  }
  const std::string c9 = MustEnqueue(PgSlack("C9"));
  MustApply(c9, To(DeliveryState::kCancelled, kPgT0 + 9));
  const std::string key = DestinationKeyOf("slack", "acme", "bot", "C1");
  auto page = store_->PendingFor(key, "", 3);
  ASSERT_TRUE(page.has_value()) << page.error().ToString();
  ASSERT_EQ(page->deliveries.size(), 3u);
  EXPECT_EQ(page->deliveries[0].id, ids[0]);
  EXPECT_EQ(page->deliveries[2].id, ids[2]);
  auto rest = store_->PendingFor(key, ids[2], 10);
  ASSERT_TRUE(rest.has_value());
  ASSERT_EQ(rest->deliveries.size(), 2u);
  EXPECT_EQ(rest->deliveries[1].id, ids[4]);
  auto dests = store_->ListDestinations("", 10);
  ASSERT_TRUE(dests.has_value()) << dests.error().ToString();
  ASSERT_EQ(dests->size(), 2u);  // C9's only delivery is cancelled
  EXPECT_EQ((*dests)[0], DestinationKeyOf("slack", "acme", "bot", "C0"));
  EXPECT_EQ((*dests)[1], key);
  auto after = store_->ListDestinations((*dests)[0], 10);
  ASSERT_TRUE(after.has_value());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0], key);
}

// Verifies List's filters (state, tenant, platform, destination, reason prefix, time bounds)
// and that its cursor walks every match once.
TEST_F(PgStoreTest, PostgresListFiltersAndPages) {
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i) {
    NewDelivery d = PgSlack(i % 2 == 0 ? "C1" : "C2");
    if (i == 6) {
      d.tenant = "other";
    }
    ids.push_back(MustEnqueue(d, kPgT0 + i * 1'000));
  }
  MustApply(ids[1], To(DeliveryState::kDead, kPgT0 + 10'000, "http_404"));
  auto dead = store_->List(ListFilter{.state = DeliveryState::kDead, .reason_prefix = "http_"});
  ASSERT_TRUE(dead.has_value());
  ASSERT_EQ(dead->deliveries.size(), 1u);
  EXPECT_EQ(dead->deliveries[0].id, ids[1]);
  auto c1 = store_->List(ListFilter{.tenant = "acme", .destination = "C1"});
  ASSERT_TRUE(c1.has_value());
  EXPECT_EQ(c1->deliveries.size(), 3u);  // 0, 2, 4 (6 is another tenant's)
  auto window = store_->List(ListFilter{.since_ms = kPgT0 + 2'000, .until_ms = kPgT0 + 4'000});
  ASSERT_TRUE(window.has_value());
  ASSERT_EQ(window->deliveries.size(), 2u);
  EXPECT_EQ(window->deliveries[0].id, ids[2]);
  std::vector<std::string> walked;
  ListFilter f{.platform = "slack", .limit = 2};
  for (int pages = 0; pages < 10; ++pages) {
    auto page = store_->List(f);
    ASSERT_TRUE(page.has_value());
    for (const Delivery& d : page->deliveries) {
      walked.push_back(d.id);
    }
    if (page->next_cursor.empty()) {
      break;
    }
    f.after_id = page->next_cursor;
  }
  EXPECT_EQ(walked, ids);
}

// Verifies that each tenant's stored bytes follow every write and removal and equal a scan.
TEST_F(PgStoreTest, PostgresStoredBytesMatchScan) {
  const std::string a = MustEnqueue(PgSlack("C1", "k"));
  NewDelivery other = PgSlack("C1");
  other.tenant = "beta";
  other.payload = std::string(5'000, 'x');
  MustEnqueue(other);
  MustApply(a, To(DeliveryState::kInFlight, kPgT0 + 1));
  Attempt attempt{.at_ms = kPgT0 + 1, .http_status = 500, .detail = "server error"};
  StateChange retry = To(DeliveryState::kDeferred, kPgT0 + 2, "http_500");
  retry.attempt = attempt;
  retry.consume_attempt = true;
  MustApply(a, retry);
  auto scan = store_->ScanStoredBytes();
  ASSERT_TRUE(scan.has_value()) << scan.error().ToString();
  ASSERT_EQ(scan->size(), 2u);
  EXPECT_EQ(*store_->TenantStoredBytes("acme"), scan->at("acme"));
  EXPECT_EQ(*store_->TenantStoredBytes("beta"), scan->at("beta"));
  EXPECT_GT(scan->at("beta"), 5'000u);
  MustApply(a, To(DeliveryState::kCancelled, kPgT0 + 3));
  ASSERT_TRUE(store_->Purge(a).ok());
  EXPECT_EQ(*store_->TenantStoredBytes("acme"), 0u);
  EXPECT_EQ(*store_->TenantStoredBytes("nobody"), 0u);
}

// Verifies retention: finished records go after their state's age with their idempotency key,
// a key outlives its live delivery, an expired key is released while its record stays, Purge
// refuses live deliveries, and `more` reports a call stopped by its max.
TEST_F(PgStoreTest, PostgresPurgeExpiredAppliesThePolicy) {
  RetentionPolicy policy{
      .delivered_ms = 1'000, .cancelled_ms = 0, .dead_ms = 100'000, .idempotency_ms = 500};
  const std::string delivered = MustEnqueue(PgSlack("C1", "kd"));
  const std::string dead = MustEnqueue(PgSlack("C1", "kx"));
  const std::string live = MustEnqueue(PgSlack("C1", "kl"));
  const std::string cancelled = MustEnqueue(PgSlack("C1"));
  MustApply(delivered, To(DeliveryState::kInFlight, kPgT0 + 1));
  MustApply(delivered, To(DeliveryState::kDelivered, kPgT0 + 2));
  MustApply(dead, To(DeliveryState::kDead, kPgT0 + 2, "http_404"));
  MustApply(cancelled, To(DeliveryState::kCancelled, kPgT0 + 2));
  EXPECT_EQ(store_->Purge(live).code(), Status::Code::kFailedPrecondition);

  auto first = store_->PurgeExpired(policy, kPgT0 + 2'000, 1);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->delivered, 1u);
  EXPECT_TRUE(first->more);  // the dead one's key is due too
  EXPECT_EQ(store_->Get(delivered).error().code(), Status::Code::kNotFound);
  auto second = store_->PurgeExpired(policy, kPgT0 + 2'000, 100);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_EQ(second->idempotency_keys, 1u);
  EXPECT_FALSE(second->more);
  EXPECT_TRUE(store_->Get(dead).has_value());       // dead are kept 100 s
  EXPECT_TRUE(store_->Get(cancelled).has_value());  // an age of 0 keeps them
  // The released key is a new delivery now; the live one's key still answers.
  EXPECT_TRUE(store_->Enqueue(PgSlack("C1", "kx"), kPgT0 + 2'001)->created);
  EXPECT_TRUE(store_->Enqueue(PgSlack("C1", "kd"), kPgT0 + 2'001)->created);
  auto repeat = store_->Enqueue(PgSlack("C1", "kl"), kPgT0 + 2'001);
  EXPECT_FALSE(repeat->created);
  EXPECT_EQ(repeat->id, live);
  ASSERT_TRUE(store_->Purge(dead).ok());
  EXPECT_EQ(store_->Purge(dead).code(), Status::Code::kNotFound);
  ExpectCountsMatchScan();
  auto counts = store_->Counts();
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDead), 0u);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kDelivered), 0u);
}

// Verifies that quota charges move with the state in the same transaction: charged at intake,
// given back when the delivery dies, charged again by a replay, and read again after a reopen.
TEST_F(PgStoreTest, PostgresQuotaChargesMoveWithState) {
  const pacing::WindowShape shape = pacing::WindowShape::Of(100'000);
  NewDelivery d = PgSlack("C1", "q1");
  d.cost = 3;
  d.charges.push_back(
      QuotaCharge{"monthly", shape.window_ms, shape.slice_ms, shape.ExpiryOf(kPgT0), 3});
  const std::string id = MustEnqueue(d);
  MustEnqueue(d);  // a repeated key charges nothing
  auto used = [&](int64_t now) { return store_->QuotaUsage("acme", "monthly", now).Used(now); };
  EXPECT_EQ(used(kPgT0 + 1), 3);
  MustApply(id, To(DeliveryState::kDead, kPgT0 + 2, "http_404"));
  EXPECT_EQ(used(kPgT0 + 3), 0);
  MustApply(id, To(DeliveryState::kQueued, kPgT0 + 4));
  EXPECT_EQ(used(kPgT0 + 5), 3);
  Reopen();
  EXPECT_EQ(used(kPgT0 + 6), 3);
  EXPECT_EQ(store_->QuotaUsage("acme", "never", kPgT0).Used(kPgT0), 0);
}

// Verifies settings: written, listed by prefix in key order, deleted by an empty value.
TEST_F(PgStoreTest, PostgresSettingsRoundTrip) {
  ASSERT_TRUE(store_->PutSetting("overrides/b", R"({"x":2})").ok());
  ASSERT_TRUE(store_->PutSetting("overrides/a", R"({"x":1})").ok());
  ASSERT_TRUE(store_->PutSetting("quotas/a", "{}").ok());
  auto listed = store_->ListSettings("overrides/");
  ASSERT_TRUE(listed.has_value()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].first, "overrides/a");
  EXPECT_EQ((*listed)[1].second, R"({"x":2})");
  ASSERT_TRUE(store_->PutSetting("overrides/a", "").ok());
  EXPECT_EQ(store_->ListSettings("overrides/")->size(), 1u);
}

// Verifies that with a secrets key, credentials and secret destinations are sealed in the
// database (neither shows in any column) and read back opened, and that another key is refused
// at open.
TEST_F(PgStoreTest, PostgresSealsSecretsAtRest) {
  options_.secrets_key =
      *SecretsKey::Parse("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
  Reopen();
  ASSERT_TRUE(store_
                  ->PutSetting("credentials/acme\x1f"
                               "bot",
                               R"({"token":"xoxb-SECRET1"})")
                  .ok());
  NewDelivery d = PgSlack("C1");
  d.platform = "discord";
  d.destination = "webhooks/123456/HOOKTOKENsecret-abcdef";
  const std::string id = MustEnqueue(d);
  EXPECT_EQ(store_->Get(id)->destination, d.destination);
  auto listed = store_->ListSettings("credentials/");
  ASSERT_TRUE(listed.has_value()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].second, R"({"token":"xoxb-SECRET1"})");
  const std::string key = DestinationKeyOf("discord", "acme", "bot", d.destination);
  auto pending = store_->PendingFor(key, "", 10);
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->deliveries.size(), 1u);
  EXPECT_EQ(*store_->ListDestinations("", 10), std::vector<std::string>{key});

  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  for (std::string_view table : {"egress_deliveries", "egress_settings", "egress_counters"}) {
    auto dump = raw->Exec(std::string("SELECT convert_to(t::text, 'UTF8') FROM ") +
                          std::string(table) + " t");
    ASSERT_TRUE(dump.has_value()) << dump.error().ToString();
    for (int i = 0; i < dump->rows(); ++i) {
      const std::string row(dump->Bytes(i, 0));
      EXPECT_EQ(row.find("SECRET1"), std::string::npos) << table;
      EXPECT_EQ(row.find("HOOKTOKEN"), std::string::npos) << table;
      // bytea columns print as hex: look for the token's hex too.
      EXPECT_EQ(row.find("484f4f4b544f4b454e"), std::string::npos) << table;
    }
  }
  store_.reset();
  options_.secrets_key =
      *SecretsKey::Parse("ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
  auto wrong = OpenStore();
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), Status::Code::kCorruption);
  options_.secrets_key.reset();
  auto none = OpenStore();
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), Status::Code::kFailedPrecondition);
}

// Verifies that a record whose bytes do not decode is reported by PendingFor without failing
// the read, and that MoveCorruptToDead rewrites it as dead with its bytes and moves the counts.
TEST_F(PgStoreTest, PostgresMovesCorruptRecordsToDead) {
  const std::string bad = MustEnqueue(PgSlack("C1"));
  const std::string good = MustEnqueue(PgSlack("C1"));
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  ASSERT_TRUE(raw->Exec("UPDATE egress_deliveries SET record = '\\x01ff'::bytea WHERE id = $1",
                        PgParams().Text(bad))
                  .has_value());
  const std::string key = DestinationKeyOf("slack", "acme", "bot", "C1");
  auto work = store_->PendingFor(key, "", 10);
  ASSERT_TRUE(work.has_value()) << work.error().ToString();
  ASSERT_EQ(work->corrupt.size(), 1u);
  EXPECT_EQ(work->corrupt[0].id, bad);
  ASSERT_EQ(work->deliveries.size(), 1u);
  EXPECT_EQ(work->deliveries[0].id, good);
  EXPECT_EQ(store_->MoveCorruptToDead(good, key, kPgT0 + 1).error().code(),
            Status::Code::kFailedPrecondition);
  auto moved = store_->MoveCorruptToDead(bad, key, kPgT0 + 1);
  ASSERT_TRUE(moved.has_value()) << moved.error().ToString();
  EXPECT_EQ(moved->state, DeliveryState::kDead);
  EXPECT_TRUE(moved->reason.starts_with("corrupt_record: ")) << moved->reason;
  EXPECT_EQ(moved->payload, std::string("\x01\xff", 2));
  EXPECT_EQ(store_->Get(bad)->state, DeliveryState::kDead);
  EXPECT_EQ(store_->PendingFor(key, "", 10)->corrupt.size(), 0u);
  ExpectCountsMatchScan();
  EXPECT_EQ(store_->MoveCorruptToDead(bad, key, kPgT0 + 2).error().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace egress::storage
