#pragma once

#include <memory>

#include "dispatcher/base/result.h"
#include "storage/queue_store.h"

namespace egress::storage {

// Opens (or creates) the RocksDB delivery store at options.path. Leases (moves to in_flight)
// are kept in this store's memory only, so deliveries in flight at a crash are found waiting
// again, as the disk has them (at-least-once); in_flight records written by older builds are
// queued again, due at `now_ms`. Errors:
// - Busy when another process has the store open;
// - InvalidArgument when the directory holds something that is not a relay-egress store;
// - Corruption when the store cannot be read (never a silent fresh start);
// - IoError for other disk failures.
Result<std::unique_ptr<QueueStore>> OpenRocksQueueStore(const StoreOptions& options,
                                                        int64_t now_ms);

// Opens an existing store for reading only, with RocksDB's read-only mode: it takes no lock, so
// it works while a service (or another CLI) holds the store, and it writes nothing. It sees what
// was durable when it opened, not later writes, and not the holder's leases: deliveries the
// holder has in flight show as queued (or deferred), as they were before the lease.
// Every write method returns FailedPrecondition "store opened read-only". Errors: NotFound when
// options.path holds no store; InvalidArgument and Corruption as above; IoError otherwise.
Result<std::unique_ptr<QueueStore>> OpenRocksQueueStoreReadOnly(const StoreOptions& options);

}  // namespace egress::storage
