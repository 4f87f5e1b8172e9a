#pragma once

// A PostgreSQL QueueStore on a fresh database of the test binary's shared server
// (tests/support/postgres_server.h), for the pg_queue_store_*_itest.cc suites.

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "storage/pg_connection.h"
#include "storage/pg_queue_store.h"
#include "tests/support/postgres_server.h"

namespace egress::storage {

inline constexpr int64_t kPgT0 = 1'767'225'600'000;

inline NewDelivery PgSlack(std::string channel, std::string idem = "") {
  NewDelivery d;
  d.tenant = "acme";
  d.platform = "slack";
  d.destination = std::move(channel);
  d.credential = "bot";
  d.payload = R"({"text":"hello"})";
  d.idempotency_key = std::move(idem);
  return d;
}

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PostgresServer::TestDatabase db = PostgresServer::FreshDatabase();
    if (db.not_installed) {
      GTEST_SKIP() << PostgresServer::kNotInstalled;
    }
    ASSERT_TRUE(db.error.empty()) << db.error;
    pg_.url = db.url;
    pg_.pool_size = 4;
    Reopen();
  }

  Result<std::unique_ptr<QueueStore>> OpenStore() {
    return OpenPostgresQueueStore(pg_, options_, kPgT0);
  }
  void Reopen() {
    store_.reset();
    auto opened = OpenStore();
    ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
    store_ = std::move(*opened);
  }
  // A connection of its own to the test's database, for what the store does not show.
  std::unique_ptr<PgConnection> Raw() {
    auto c = PgConnection::Connect(pg_.url);
    EXPECT_TRUE(c.has_value()) << c.error().ToString();
    return c ? std::move(*c) : nullptr;
  }
  std::string MustEnqueue(const NewDelivery& d, int64_t now_ms = kPgT0) {
    auto r = store_->Enqueue(d, now_ms);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.has_value() ? r->id : "";
  }
  Delivery MustApply(const std::string& id, const StateChange& change) {
    auto r = store_->Apply(id, change);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.has_value() ? *r : Delivery{};
  }
  void ExpectCountsMatchScan() {
    auto counts = store_->Counts();
    auto scanned = store_->ScanCounts();
    ASSERT_TRUE(counts.has_value()) << counts.error().ToString();
    ASSERT_TRUE(scanned.has_value()) << scanned.error().ToString();
    EXPECT_EQ(*counts, *scanned);
  }

  PostgresStoreOptions pg_;
  StoreOptions options_;
  std::unique_ptr<QueueStore> store_;
};

}  // namespace egress::storage
