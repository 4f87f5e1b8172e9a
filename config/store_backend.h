#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "adapters/credential_refs.h"

namespace egress::config {

// Which store keeps the deliveries ([store] backend).
enum class StoreBackend : uint8_t {
  kRocksDb,   // "rocksdb": embedded, in server.data_dir; one node's disk (the default)
  kPostgres,  // "postgres": shared by every node of a cluster (docs/deployment.md)
};

// [store]: where the deliveries are kept (docs/configuration.md, "[store]"). Plain data; holds a
// secret (the password): never log it as a whole.
struct StoreBackendOptions {
  StoreBackend backend = StoreBackend::kRocksDb;
  // postgres: a libpq connection URI ("postgresql://egress@db1,db2/egress?target_session_attrs=
  // read-write", several hosts so that nodes follow a promoted standby) or key=value string.
  // Shown and logged without its password (storage::RedactConninfo). Required for postgres.
  std::string url;
  // postgres: the password kept apart from the URL, by reference (password_file or
  // password_env), read at load; over the URL's own. A secret. Default: none.
  std::optional<adapters::SecretRef> password_ref;
  std::string password;
  // postgres: connections each node keeps open to the database. 1 to 256. Default: 8.
  int64_t pool_size = 8;
  // rocksdb: the write buffers of all the store's families together, in MiB (they also bound
  // the write-ahead log a crash leaves to replay: half of it). 16 to 4,096. Default: 32.
  int64_t memtable_mb = 32;
  // rocksdb: table blocks cached for reads, in MiB; 0 turns the cache off. 0 to 65,536.
  // Default: 8.
  int64_t block_cache_mb = 8;
};

}  // namespace egress::config
