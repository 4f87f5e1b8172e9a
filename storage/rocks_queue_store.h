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

}  // namespace egress::storage
