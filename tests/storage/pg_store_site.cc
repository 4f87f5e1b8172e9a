#include "tests/storage/pg_store_site.h"

#include <utility>

#include <gtest/gtest.h>

#include "tests/support/pg_store_audit.h"
#include "tests/support/postgres_server.h"

namespace egress::storage {

Result<std::unique_ptr<PostgresStoreSite>> PostgresStoreSite::Create() {
  PostgresServer& server = PostgresServer::Shared();
  if (server.port() == 0) {
    return Status::Unavailable("postgres did not start: " + server.error());
  }
  std::string database = server.CreateDatabase();
  if (database.empty()) {
    return Status::Unavailable("postgres: cannot create a database: " + server.error());
  }
  std::string url = server.Url(database);
  return std::unique_ptr<PostgresStoreSite>(
      new PostgresStoreSite(std::move(database), std::move(url)));
}

PostgresStoreSite::~PostgresStoreSite() {
  // The shared server lives on through the binary's tests: give the space back. FORCE ends a
  // connection a failed test may have left.
  PostgresServer& server = PostgresServer::Shared();
  auto c = PgConnection::Connect(server.Url());
  if (c) {
    (*c)->Run("DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)")
        .IgnoreError();  // a database left behind costs disk only, gone with the server
  }
}

std::unique_ptr<PgConnection> PostgresStoreSite::Connect() {
  auto c = PgConnection::Connect(url_);
  EXPECT_TRUE(c.has_value()) << c.error().ToString();
  return c ? std::move(*c) : nullptr;
}

Result<std::unique_ptr<QueueStore>> PostgresStoreSite::Open(StoreOptions options, int64_t now_ms) {
  return Reopen(std::move(options), now_ms);  // the database is new: the store starts empty
}

Result<std::unique_ptr<QueueStore>> PostgresStoreSite::Reopen(StoreOptions options,
                                                              int64_t now_ms) {
  return OpenPostgresQueueStore(PostgresStoreOptions{.url = url_}, options, now_ms);
}

std::string PostgresStoreSite::RecordAtRest(const std::string& id) {
  std::unique_ptr<PgConnection> c = Connect();
  if (c == nullptr) {
    return "";
  }
  auto r = c->Exec("SELECT record FROM egress_deliveries WHERE id = $1", PgParams().Text(id));
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return r && r->rows() == 1 ? std::string(r->Bytes(0, 0)) : "";
}

void PostgresStoreSite::PutRecordAtRest(const std::string& id, const std::string& bytes) {
  std::unique_ptr<PgConnection> c = Connect();
  if (c == nullptr) {
    return;
  }
  auto r = c->Exec("UPDATE egress_deliveries SET record = $2 WHERE id = $1",
                   PgParams().Text(id).Bytes(bytes));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->affected(), 1) << "no row " << id;
}

std::vector<std::string> PostgresStoreSite::Audit() { return AuditPgStore(url_); }

StoreKind PostgresStoreKind() {
  return StoreKind{.name = "Postgres",
                   .skip_reason = []() -> std::string {
                     return PostgresServer::BinDir().empty()
                                ? "PostgreSQL 15 is not installed (apt-get install postgresql-15)"
                                : "";
                   },
                   .new_site = []() -> Result<std::unique_ptr<StoreSite>> {
                     auto site = PostgresStoreSite::Create();
                     if (!site) {
                       return site.error();
                     }
                     return std::unique_ptr<StoreSite>(std::move(*site));
                   }};
}

}  // namespace egress::storage
