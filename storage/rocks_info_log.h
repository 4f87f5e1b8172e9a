#pragma once

// RocksDB's informational log (the LOG file in the store's directory), written by us instead of
// by RocksDB's own logger: Debian's librocksdb 7.8 is built with assertions, and its logger
// aborts the process on the second line it cannot write (WritableFileWriter asserts on a write
// after a failed one), which a full disk makes happen. Included only by storage/rocks_*.cc.

#include <cstdint>
#include <memory>
#include <string>

#include <rocksdb/env.h>

#include "dispatcher/base/result.h"

namespace egress::storage {

// Opens `dir`/LOG for appending, first renaming a LOG left by an earlier open to
// LOG.old.<now_ms * 1000> (RocksDB's own names, so RocksDB keeps only the newest
// keep_log_file_num of them). As with RocksDB's own logger, lines wait in memory (up to 64 KiB)
// until RocksDB flushes the log, a line comes 5 s after the last write, or the logger closes;
// lines the disk does not take (a full disk) are dropped: never retried, never fatal. Lines are
// stamped in UTC with RocksDB's clock, as RocksDB's own logger stamps them (the file is
// RocksDB's diagnostics, not ours). Thread-safe. Errors: IoError when the file cannot be opened.
Result<std::shared_ptr<rocksdb::Logger>> OpenStoreInfoLog(const std::string& dir, int64_t now_ms);

}  // namespace egress::storage
