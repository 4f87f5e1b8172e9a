#pragma once

// The PostgreSQL store under the QueueStore contract (queue_store_contract.h): its StoreSite and
// StoreKind, for the integration binary only (each site is a database of the test binary's
// shared PostgresServer, a process the unit binary may not start).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dispatcher/base/result.h"
#include "storage/pg_connection.h"
#include "storage/pg_queue_store.h"
#include "tests/storage/queue_store_contract.h"

namespace egress::storage {

// A database of its own on PostgresServer::Shared(), created by Create and dropped by the
// destructor (after every store handle on it is gone, as the fixture's order ensures). At rest,
// records are read and replaced through a connection of the site's own (egress_deliveries.record)
// and audited by AuditPgStore (tests/support/pg_store_audit.h).
class PostgresStoreSite final : public StoreSite {
 public:
  // Starts the shared server on first use; Unavailable when it did not start or the database
  // could not be created.
  static Result<std::unique_ptr<PostgresStoreSite>> Create();
  ~PostgresStoreSite() override;

  // The libpq URL of the site's database.
  const std::string& url() const { return url_; }

  Result<std::unique_ptr<QueueStore>> Open(StoreOptions options, int64_t now_ms) override;
  Result<std::unique_ptr<QueueStore>> Reopen(StoreOptions options, int64_t now_ms) override;
  // Another store object on the database, as a second node's.
  Result<std::unique_ptr<QueueStore>> OpenPeer(StoreOptions options, int64_t now_ms) override {
    return Reopen(std::move(options), now_ms);
  }
  std::string RecordAtRest(const std::string& id) override;
  void PutRecordAtRest(const std::string& id, const std::string& bytes) override;
  std::vector<std::string> Audit() override;

 private:
  PostgresStoreSite(std::string database, std::string url)
      : database_(std::move(database)), url_(std::move(url)) {}
  // A connection to the site's database (a test failure and null when it fails).
  std::unique_ptr<PgConnection> Connect();

  const std::string database_;
  const std::string url_;
};

// The PostgreSQL kind: skipped when PostgreSQL 15 is not installed.
StoreKind PostgresStoreKind();

}  // namespace egress::storage
