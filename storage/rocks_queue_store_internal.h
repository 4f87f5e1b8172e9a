#pragma once

// The RocksDB QueueStore. Included only by storage/rocks_*.cc; everyone else uses
// OpenRocksQueueStore (rocks_queue_store.h).

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/statistics.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>

#include "storage/counter_table.h"
#include "storage/delivery_id.h"
#include "storage/destination_seal.h"
#include "storage/lease_table.h"
#include "storage/queue_store.h"
#include "storage/quota_table.h"
#include "storage/record_cache.h"
#include "storage/rocks_health_listener.h"
#include "storage/rocks_schema.h"

namespace egress::storage {

// The format marker, in meta. Older formats this build migrates: rocks_queue_store.cc.
// 2: per-destination counters (destcount/...) in meta.
// 3: the due index holds deferred deliveries only (queued ones are due as soon as they are
//    queued); a format-2 store is migrated on a writable open (MigrateFromFormat2).
// 4: the retention index (done) is keyed by class, holds dead records and the idempotency keys
//    of finished deliveries too; a format-3 store is migrated on a writable open
//    (MigrateFromFormat3).
// 5: per-tenant stored bytes (storedbytes/...) in meta; a format-4 store is migrated on a
//    writable open (MigrateFromFormat4).
inline constexpr std::string_view kFormatKey = "format";
inline constexpr std::string_view kFormatValue = "relay-egress-store/5";
inline constexpr std::string_view kFormat4 = "relay-egress-store/4";
// In meta: present once every destination that holds a secret is sealed (SealDestinations).
inline constexpr std::string_view kDestinationsSealedKey = "destinations_sealed";

// One index entry of a record: its family, key and value (empty but for idempotency expiry).
struct IndexEntry {
  Family family;
  std::string key;
  std::string value;
  friend bool operator==(const IndexEntry&, const IndexEntry&) = default;
};
// Every index entry `d` has in the current format; `dest` is DestinationKeyOf(d).
std::vector<IndexEntry> IndexEntriesOf(const Delivery& d, std::string_view dest);

// The bytes one record takes as QueueStore::TenantStoredBytes counts them: its key (the id) and
// its value (the encoded record).
inline uint64_t StoredRecordBytes(std::string_view id, std::string_view record) {
  return id.size() + record.size();
}

// Every batch the store writes goes through here and nothing else happens here: the frame
// tests/tsan.supp names (RocksDB's write group hands batches between threads with atomics
// ThreadSanitizer cannot see in the uninstrumented library).
rocksdb::Status WriteBatchToRocks(rocksdb::DB& db, const rocksdb::WriteOptions& options,
                                  rocksdb::WriteBatch& batch);

// Locks a set of stripes in address order, so two holders never wait on each other.
class StripeLocks {
 public:
  void Add(std::mutex& m) { mutexes_.push_back(&m); }
  void LockAll() {
    std::sort(mutexes_.begin(), mutexes_.end());
    mutexes_.erase(std::unique(mutexes_.begin(), mutexes_.end()), mutexes_.end());
    for (std::mutex* m : mutexes_) {
      locks_.emplace_back(*m);
    }
  }

 private:
  std::vector<std::mutex*> mutexes_;
  std::vector<std::unique_lock<std::mutex>> locks_;
};

// What a database is opened with, kept by the store for as long as it lives, so that a reopen
// (RocksQueueStore::Recover) gives the new database the same statistics, LOG and health.
struct RocksHooks {
  std::shared_ptr<rocksdb::Statistics> stats;
  std::shared_ptr<rocksdb::Logger> info_log;  // null: RocksDB's (read-only opens: a null logger)
  std::shared_ptr<HealthListener> health;     // null for a read-only open
  // One table-block cache for every family, and one cap on all their write buffers
  // (StoreOptions::block_cache_bytes, memtable_bytes); a reopen keeps them.
  std::shared_ptr<rocksdb::Cache> block_cache;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers;
};

// One open database: the DB and its column family handles, in kFamilies order.
struct OpenedDb {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
};

// Opens the database at `path` with every column family, read-write (taking the LOCK; `fresh`
// creates it) or read-only. Errors as OpenRocksQueueStore's.
Result<OpenedDb> OpenRocksDb(const std::string& path, bool fresh, bool read_only,
                             const RocksHooks& hooks);

class RocksQueueStore final : public QueueStore {
 public:
  // Takes ownership of the database. With `read_only` (a DB from OpenForReadOnly) every write
  // method fails without touching it.
  RocksQueueStore(StoreOptions options, OpenedDb opened, RocksHooks hooks, uint64_t id_seed,
                  const std::string& newest_id, bool read_only);
  ~RocksQueueStore() override;

  Result<EnqueueResult> Enqueue(const NewDelivery& d, int64_t now_ms) override;
  Result<std::vector<Result<EnqueueResult>>> EnqueueBatch(const std::vector<NewDelivery>& ds,
                                                          int64_t now_ms) override;
  Result<Delivery> Get(const std::string& id) override;
  Result<Delivery> Apply(const std::string& id, const StateChange& change) override;
  Result<std::vector<Result<Delivery>>> ApplyBatch(const std::vector<IdChange>& changes) override;
  Result<std::vector<Delivery>> LeaseDue(int64_t now_ms, size_t max) override;
  Result<std::vector<std::string>> ListDestinations(const std::string& after_key,
                                                    size_t limit) override;
  Result<DestinationWork> PendingFor(const std::string& destination_key,
                                     const std::string& after_id, size_t limit) override;
  Result<Delivery> MoveCorruptToDead(const std::string& id, const std::string& destination_key,
                                     int64_t now_ms) override;
  Result<ListPage> List(const ListFilter& filter) override;
  Result<StateCounts> Counts() override;
  Result<uint64_t> TenantBacklog(const std::string& tenant) override;
  Result<std::vector<StateCounts>> DestinationCounts(
      const std::vector<std::string>& destination_keys) override;
  Result<std::vector<GroupCounts>> BacklogByTenantPlatform() override;
  Result<std::vector<GroupCounts>> TenantBacklogByPlatform(const std::string& tenant) override;
  Result<StateCounts> ScanCounts() override;
  Result<uint64_t> TenantStoredBytes(const std::string& tenant) override;
  Result<std::map<std::string, uint64_t>> ScanStoredBytes() override;
  Result<PurgeCounts> PurgeExpired(const RetentionPolicy& policy, int64_t now_ms,
                                   size_t max) override;
  Status Purge(const std::string& id) override;
  StoreStats Stats() override;
  StoreMemory MemoryUse() override;
  StoreHealth Health() override;
  Status Recover() override;
  Status PutSetting(const std::string& key, const std::string& value) override;
  pacing::SlidingWindowCounter QuotaUsage(const std::string& tenant, const std::string& quota,
                                          int64_t now_ms) override;
  // Seals every plaintext setting under a sealed prefix and checks that every sealed one opens
  // (options_.secrets_key); a no-op without a key or when read-only. Then flushes and compacts
  // the meta family when it sealed any, so the plaintext leaves the WAL and the tables.
  Status SealSettings();
  // Seals, with options_.secrets_key, the destinations that hold a secret in records and index
  // and counter keys written without a key (older builds, or a store opened without one), and
  // checks that the sealed ones open; a no-op without a key or when read-only, or once done
  // (the meta marker kDestinationsSealedKey, which a writable open without a key removes).
  // Call before LoadCounters: it moves counters on disk only. Returns how many records it
  // sealed.
  Result<size_t> SealDestinations();
  Result<std::vector<std::pair<std::string, std::string>>> ListSettings(
      const std::string& prefix) override;
  Result<uint64_t> SettingsVersion() override;
  Status Close() override;

  // Moves every in_flight record on disk back to queued, due at `now_ms`. Returns how many.
  // Only stores written by older builds hold any: this build keeps leases in memory.
  Result<size_t> RecoverInFlight(int64_t now_ms);
  // Checks or writes the format marker; a writable open migrates an older format it knows.
  Status CheckFormat(bool fresh, bool read_only);
  // Reads the counters into memory; call once after CheckFormat.
  Status LoadCounters() {
    if (Status s = counters_.Load(*db_, cf(Family::kMeta)); !s.ok()) {
      return s;
    }
    return quotas_.Load(*db_, cf(Family::kMeta));
  }

 private:
  // Per-id (and per idempotency key) locks, by hash. A batch holds every stripe its ids fall
  // in, plus a few more locks: 32 keeps that under ThreadSanitizer's deadlock detector's limit
  // of 64 locks held by one thread (64 stripes crashed it in LeaseDue), and a handful of store
  // threads rarely meet on one stripe.
  static constexpr size_t kStripes = 32;

  rocksdb::ColumnFamilyHandle* cf(Family f) const { return handles_[static_cast<size_t>(f)]; }
  std::mutex& IdStripe(std::string_view id);
  std::mutex& IdemStripe(std::string_view tenant, std::string_view key);
  Status MigrateFromFormat2();
  // Format 4 keys the retention index by class (state or idempotency key) and indexes dead
  // records and idempotency keys there too: rebuilds it from the state index.
  Status MigrateFromFormat3();
  // Format 5 counts each tenant's stored bytes: writes the counters from a scan of every record,
  // with the marker, in one batch.
  Status MigrateFromFormat4();
  // The stored bytes per tenant of every record that decodes, and how many did not.
  Result<std::map<std::string, uint64_t>> SumStoredBytes(size_t& undecodable);
  // Held shared by every method that uses db_ (from before CheckOpen to its last use of the
  // database), exclusively by Close and Reopen, which replace it. Never taken twice by one
  // thread: a method calls no other public method while it holds it (Enqueue and Apply take
  // nothing themselves).
  std::shared_lock<std::shared_mutex> UseDb() const {
    return std::shared_lock<std::shared_mutex>(db_mu_);
  }
  // FailedPrecondition once closed; Unavailable while the database is being (or failed to be)
  // reopened. Call under UseDb.
  Status CheckOpen() const;
  // CheckOpen, FailedPrecondition when the store was opened read-only, Unavailable while the
  // store is unhealthy (RocksDB refuses writes: see Recover). Call under UseDb.
  Status CheckWritable() const;

  // Whether every column family's active memtable is empty: RocksDB's Resume then keeps the
  // write-ahead log a failed write left broken (it switches logs only when it flushes a
  // memtable), and the next write to it aborts the process (Debian's RocksDB is built with
  // assertions). Call under UseDb.
  bool ActiveMemtablesEmpty() const;
  // Closes the database and opens it again (a new write-ahead log), then checks what this
  // store keeps in memory against it: counters are read again, the record cache is emptied, a
  // lease whose record changed on disk is dropped. `since`: the health generation Recover
  // started from. Takes UseDb's lock exclusively.
  Status Reopen(uint64_t since);
  // Healthy again unless a fault was reported after `since`: Ok, or Unavailable naming the
  // newer fault (Recover's contract: Ok only when the store takes writes).
  Status ClearedOrNewFault(uint64_t since);

  // The stored bytes of `id`, from the record cache or the disk; NotFound when absent.
  Result<std::string> ReadBytes(std::string_view id);
  // Reads the record with `id` from disk (or the record cache); NotFound when absent.
  // `stored_bytes`, when given, gets its size (StoredRecordBytes).
  Result<Delivery> Read(std::string_view id, uint64_t* stored_bytes = nullptr);
  // A record's bytes as a delivery, its destination opened (seal_).
  Result<Delivery> Decode(std::string_view bytes) const;
  // What readers see: the leased version when `id` is leased, else the record on disk.
  // `stored_bytes`, when given, gets the size of the record on disk (StoredRecordBytes).
  Result<Delivery> ReadCurrent(std::string_view id, uint64_t* stored_bytes = nullptr);
  // List with state in_flight: the leases, in id order.
  // One atomic change being built: its operations and its counter deltas. Commit sorts the
  // operations by column family and key (keeping the order of those on one key), so each
  // memtable takes its share in key order and RocksDB's skiplist reuses its insert position
  // instead of searching from the top for every key.
  struct PendingWrite {
    enum class Kind : uint8_t { kPut, kDelete, kMerge };
    struct Op {
      Family family;
      Kind kind;
      std::string key;
      std::string value;
    };
    void Put(Family f, std::string key, std::string value) {
      ops.push_back({f, Kind::kPut, std::move(key), std::move(value)});
    }
    void Delete(Family f, std::string key) {
      ops.push_back({f, Kind::kDelete, std::move(key), {}});
    }
    bool empty() const { return ops.empty(); }

    std::vector<Op> ops;
    CounterDeltas counters;  // written as merges, and applied in memory
    CounterDeltas quota;     // quota slices: written as merges, applied to quotas_
    // Counter changes of leases, applied in memory only (the disk does not see leases).
    CounterDeltas memory_only;
    // Lease table changes (nullopt: drop), applied once the write succeeded.
    std::vector<std::pair<std::string, std::optional<Lease>>> leases;
    // Record cache changes, applied once the write succeeded: the position in `ops` of the
    // record's Put (its value is moved to the cache), or nullopt to drop the id.
    std::vector<std::pair<std::string, std::optional<size_t>>> records;
  };
  // Adds to `w` what turns `before` into `after` (null `before`: a new record; null `after`:
  // removal): the record, the index entries that differ, and the counter deltas, the tenant's
  // stored bytes moving from `before_bytes` (the size of the record on disk, StoredRecordBytes;
  // 0 when there is none) to the size of the record written. Returns that size (0 for a
  // removal).
  uint64_t Stage(PendingWrite& w, const Delivery* before, const Delivery* after,
                 uint64_t before_bytes);
  // Adds to `w.memory_only` the counter moves from `from` to `to`: a lease starting or ending,
  // which the disk never sees.
  void StageInMemory(PendingWrite& w, const Delivery& from, const Delivery& to) const;
  // Looks up (tenant, key) -> id; empty when absent.
  Result<std::string> FindIdempotent(std::string_view tenant, std::string_view key);
  // Adds to `w` the removal of d's idempotency key when it still names d (after it expired, the
  // key may name a newer delivery). Call under d's id stripe.
  Status StageReleaseIdem(PendingWrite& w, const Delivery& d);
  // The keys of the retention index of class `tag` older than `cutoff_ms`, from the class's
  // cursor on, at most `limit`, passing over those of the ids in `skip`; sets `more` when the
  // limit stopped the scan.
  // Adds to `w` the deletion of quota slices that stopped counting before `before_ms`, at most
  // `max`; sets `more` when the limit stopped the scan.
  Status StagePruneQuotas(PendingWrite& w, int64_t before_ms, size_t max, bool& more);
  Status ScanExpired(char tag, int64_t cutoff_ms, size_t limit,
                     const std::set<std::string_view>& skip, std::vector<std::string>& keys,
                     bool& more);
  // Writes `w` (its counters as merges; nothing when it holds only leases), then applies its
  // counter deltas in memory and its lease changes.
  Status Commit(const rocksdb::WriteOptions& options, PendingWrite& w, std::string_view what);

  const StoreOptions options_;
  const DestinationSeal seal_;  // from options_.secrets_key
  const RocksHooks hooks_;
  mutable std::shared_mutex db_mu_;  // see UseDb
  std::unique_ptr<rocksdb::DB> db_;  // null after a reopen failed
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  DeliveryIdGenerator ids_;
  std::array<std::mutex, kStripes> id_stripes_;
  std::array<std::mutex, kStripes> idem_stripes_;
  std::mutex lease_mu_;  // one leaser at a time
  // One purger at a time; guards the cursors below.
  std::mutex purge_mu_;
  // Per class of the retention index (by tag byte), the last key a purge scanned: the next call
  // seeks there instead of stepping over the deletion markers the earlier ones left (until
  // compaction drops them, they cost every scan from the front: 2 ms a call in
  // bench/retention_bench with a few days of them in the memtables). Dropped once an hour of
  // purge time (`now_ms`; or when it goes back), so an entry that sorts before a cursor (a
  // record finished at a time older than one already purged: a clock stepped back by more than
  // the class's age) is found within the hour.
  std::map<char, std::string> purge_cursors_;
  int64_t cursors_since_ms_ = 0;
  // Exact counts of what readers see: the disk's counters plus the leases' moves to in_flight.
  CounterTable counters_;
  QuotaTable quotas_;    // the quota slices the stored deliveries charged
  LeaseTable leases_;    // in_flight deliveries; empty in a read-only store
  RecordCache records_;  // waiting records as on disk; empty in a read-only store
  // PutSettings of this object that returned Ok (SettingsVersion): one process opens the store.
  std::atomic<uint64_t> settings_version_{0};
  const bool read_only_;
  // False when a read-only open found a store older than format 5: it holds no stored bytes.
  bool counts_stored_bytes_ = true;
  bool closed_ = false;
};

}  // namespace egress::storage
