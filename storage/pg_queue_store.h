#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dispatcher/base/result.h"
#include "storage/pg_shard_leases.h"
#include "storage/queue_store.h"

namespace egress::storage {

struct PostgresStoreOptions {
  // A libpq connection URI or key=value string ("postgresql://egress@db.internal/egress"). A
  // secret when it holds a password: never logged nor returned (RedactConninfo).
  std::string url;
  // The password, when kept apart from the URL ([store] password_file or password_env): over the
  // URL's own. A secret. Default: empty (the URL's, a ~/.pgpass entry, or none).
  std::string password;
  // Connections kept open; each store call uses one for its duration. Default: 4.
  size_t pool_size = 4;
  // Several nodes serving the store at once, each the shards it holds a lease on
  // (pg_shard_leases.h; ownership() is then set, and every write as owner is fenced by the
  // shard's epoch). Unset: this store object dispatches everything (one node; tests).
  std::optional<ShardLeaseOptions> shard_leases;
  // The monotonic clock the shard leases' local deadlines are measured with. Required with
  // shard_leases; must outlive the store.
  const Clock* clock = nullptr;
};

// Opens the shared delivery store in the PostgreSQL database `pg.url`: creates its tables on an
// empty database or checks (and migrates) them, under an advisory lock so that nodes opening
// together never race (pg_schema.h). Implements the whole QueueStore contract with the RocksDB
// store's semantics (docs/storage.md, "PostgreSQL"); `options.path` and `record_cache_bytes` are
// not used. Leases (moves to in_flight) are kept in this store's memory, as the RocksDB store
// does: no other store object sees them. Every write is one transaction that returns after its
// COMMIT, with synchronous_commit on.
// Errors: Unavailable when the server cannot be reached; FailedPrecondition for a schema newer
// than this build or a secrets key that does not match the store (Corruption, as RocksDB's).
Result<std::unique_ptr<QueueStore>> OpenPostgresQueueStore(const PostgresStoreOptions& pg,
                                                           const StoreOptions& options,
                                                           int64_t now_ms);

}  // namespace egress::storage
