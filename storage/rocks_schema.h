#pragma once

// RocksDB-specific pieces of the store, shared by storage/rocks_*.cc only.

#include <array>
#include <memory>
#include <string_view>

#include <rocksdb/merge_operator.h>
#include <rocksdb/options.h>
#include <rocksdb/status.h>

#include "dispatcher/base/status.h"

namespace egress::storage {

// The column families, declared once. The order is the handle order after open.
enum class Family : size_t { kDefault = 0, kJobs, kDue, kDest, kState, kDone, kIdem, kMeta };
struct FamilySpec {
  Family family;
  const char* name;
  const char* holds;
};
inline constexpr std::array<FamilySpec, 8> kFamilies = {{
    {Family::kDefault, "default", "unused (RocksDB requires it)"},
    {Family::kJobs, "jobs", "id -> delivery record"},
    {Family::kDue, "due", "be64(next_attempt_ms) id -> '' for deferred"},
    {Family::kDest, "dest", "destination key \\0 id -> '' for non-terminal deliveries"},
    {Family::kState, "state", "state byte, id -> ''"},
    {Family::kDone, "done",
     "retention: state be64(finished_ms) id -> '' for finished records; "
     "'i' be64(finished_ms) id -> idem key of finished deliveries"},
    {Family::kIdem, "idem", "tenant \\0 idempotency key -> id"},
    {Family::kMeta, "meta", "format version, per-state counters (merged)"},
}};

// Adds signed 64-bit deltas stored as 8 little-endian bytes: the per-state counters.
std::shared_ptr<rocksdb::MergeOperator> NewCounterMergeOperator();
std::string EncodeCounterDelta(int64_t delta);
int64_t DecodeCounter(std::string_view bytes);

// The one mapping from rocksdb::Status to ours; `what` says what was being done.
Status FromRocks(const rocksdb::Status& s, std::string_view what);

// RocksDB counts every key comparison of a thread in a thread-local perf context, reached through
// __tls_get_addr from the shared library: a tenth of a memtable insert. Nothing here reads those
// counters, so the store turns them off (once per thread) before each write and each record read
// from disk; a thread that only iterates keeps counting, at a little cost per comparison.
void QuietPerfCounters();

// Every write waits for the WAL to reach disk. (Leases, which a crash may lose, are not
// written at all: docs/storage.md.)
rocksdb::WriteOptions SyncedWrite();

}  // namespace egress::storage
