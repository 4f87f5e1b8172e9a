#pragma once

#include <memory>

#include "dispatcher/result.h"
#include "storage/queue_store.h"

namespace egress::storage {

// Opens (or creates) the RocksDB delivery store at options.path. Deliveries left in_flight by a
// crash are queued again, due at `now_ms` (at-least-once). Errors:
// - Busy when another process has the store open;
// - InvalidArgument when the directory holds something that is not a relay-egress store;
// - Corruption when the store cannot be read (never a silent fresh start);
// - IoError for other disk failures.
Result<std::unique_ptr<QueueStore>> OpenRocksQueueStore(const StoreOptions& options,
                                                        int64_t now_ms);

// Opens an existing store for reading only, with RocksDB's read-only mode: it takes no lock, so
// it works while a service (or another CLI) holds the store, and it writes nothing (in_flight
// deliveries stay as they are). It sees what was durable when it opened, not later writes.
// Every write method returns FailedPrecondition "store opened read-only". Errors: NotFound when
// options.path holds no store; InvalidArgument and Corruption as above; IoError otherwise.
Result<std::unique_ptr<QueueStore>> OpenRocksQueueStoreReadOnly(const StoreOptions& options);

}  // namespace egress::storage
