// The PostgreSQL contract site (tests/storage/pg_store_site.h): its audit finds what it is
// there to find, so a clean audit in the contract suites means something.

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/index_keys.h"
#include "tests/storage/pg_store_site.h"
#include "tests/support/postgres_server.h"

namespace egress::storage {
namespace {

bool Reported(const std::vector<std::string>& problems, const std::string& part) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string& p) { return p.find(part) != std::string::npos; });
}

// Verifies that the audit of a consistent store is empty, and that it reports each kind of
// damage planted in the database: a column that disagrees with its record (state, dest_key,
// due_ms), a record that does not decode, a counter off (state, destination, stored bytes), an
// idempotency entry naming a missing record, one with the wrong finish time, and a live
// delivery that lost its key.
TEST(PostgresStoreSiteTest, AuditReportsEachKindOfDisagreement) {
  if (PostgresServer::BinDir().empty()) {
    GTEST_SKIP() << "PostgreSQL 15 is not installed (apt-get install postgresql-15)";
  }
  auto site = PostgresStoreSite::Create();
  ASSERT_TRUE(site) << site.error().ToString();
  std::vector<std::string> ids;
  {
    auto store = (*site)->Open(StoreOptions(), kT0);
    ASSERT_TRUE(store) << store.error().ToString();
    for (int i = 0; i < 6; ++i) {
      auto r = (*store)->Enqueue(Numbered(i), kT0);
      ASSERT_TRUE(r) << r.error().ToString();
      ids.push_back(r->id);
    }
    ASSERT_TRUE((*store)->Enqueue(Hook({.tenant = "globex"}), kT0));
    ASSERT_TRUE((*store)->Apply(ids[1], {.to = DeliveryState::kCancelled, .at_ms = kT0 + 1}));
    ASSERT_TRUE((*store)->Apply(ids[2], {.to = DeliveryState::kDeferred,
                                         .at_ms = kT0 + 1,
                                         .next_attempt_ms = kT0 + 100,
                                         .reason = "backoff"}));
    ASSERT_TRUE((*store)->Close().ok());
  }
  const std::vector<std::string> clean = (*site)->Audit();
  EXPECT_TRUE(clean.empty()) << clean.front();

  auto c = PgConnection::Connect((*site)->url());
  ASSERT_TRUE(c) << c.error().ToString();
  auto run = [&](const std::string& sql, const PgParams& params) {
    auto r = (*c)->Exec(sql, params);
    ASSERT_TRUE(r) << sql << ": " << r.error().ToString();
    EXPECT_GT(r->affected(), 0) << sql;
  };
  run("UPDATE egress_deliveries SET state = 3 WHERE id = $1", PgParams().Text(ids[0]));
  run("UPDATE egress_deliveries SET dest_key = 'elsewhere'::bytea WHERE id = $1",
      PgParams().Text(ids[3]));
  run("UPDATE egress_deliveries SET due_ms = due_ms + 1 WHERE id = $1", PgParams().Text(ids[2]));
  (*site)->PutRecordAtRest(ids[4], "\x01\xff");
  run("UPDATE egress_counters SET n = n + 1 WHERE ctid = (SELECT ctid FROM egress_counters "
      "WHERE key = $1 LIMIT 1)",
      PgParams().Bytes(CountKey(DeliveryState::kCancelled)));
  run("UPDATE egress_counters SET n = n - 1 WHERE ctid = (SELECT ctid FROM egress_counters "
      "WHERE key = $1 LIMIT 1)",
      PgParams().Bytes(StoredBytesKey("globex")));
  run("INSERT INTO egress_counters (key, slot, n) VALUES ($1, 99, 2)",
      PgParams().Bytes(DestCountKey(HookDestination(), DeliveryState::kDeferred)));
  run("INSERT INTO egress_idem (tenant, key, id) VALUES ('acme', 'stray', '01GONE')", PgParams());
  run("UPDATE egress_idem SET finished_ms = NULL WHERE id = $1", PgParams().Text(ids[1]));
  run("DELETE FROM egress_idem WHERE id = $1", PgParams().Text(ids[5]));

  const std::vector<std::string> problems = (*site)->Audit();
  std::string all;
  for (const std::string& p : problems) {
    all += p + "\n";
  }
  for (const std::string& want :
       {"row " + ids[0] + ": state is 3, its record says 1",
        "row " + ids[3] + ": dest_key is elsewhere",
        "row " + ids[2] + ": due_ms is " + std::to_string(kT0 + 101), "record " + ids[4] + ":",
        std::string("counter count/cancelled is 2, records 1"),
        std::string("counter storedbytes/globex"), std::string("counter destcount/deferred/"),
        std::string("names missing 01GONE"),
        "of " + ids[1] + " has finished_ms NULL, the record " + std::to_string(kT0 + 1),
        "live " + ids[5] + " does not hold its idempotency key key-5"}) {
    EXPECT_TRUE(Reported(problems, want)) << "not reported: " << want << "\nreported:\n" << all;
  }
}

}  // namespace
}  // namespace egress::storage
