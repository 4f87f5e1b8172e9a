#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dispatcher/base/result.h"
#include "dispatcher/pacing/sliding_window_counter.h"
#include "storage/delivery.h"
#include "storage/secrets_key.h"
#include "storage/shard_ownership.h"
#include "storage/state_machine.h"

namespace egress::storage {

struct StoreOptions {
  std::string path;  // a directory; created when missing
  // Largest payload accepted. Default: 1 MiB.
  size_t max_payload_bytes = 1 << 20;
  // Attempts kept per delivery, newest last. Default: 20.
  size_t history_limit = 20;
  // Largest tenant, platform, credential, destination and key fields. Default: 2 KiB.
  size_t max_field_bytes = 2048;
  // Memory for the records of waiting deliveries kept beside the disk, so the lease after an
  // enqueue reads no disk (storage/record_cache.h). Default: 32 MiB (at 14k deliveries/s a
  // record lives in it for milliseconds; at a million queued, 64 MiB held the first records of a
  // backlog parked for hours); 0 turns it off.
  size_t record_cache_bytes = 32 << 20;
  // RocksDB's write buffers (memtables) of all families together: past it the oldest flushes
  // (a soft cap: writes do not stall; the log cap below flushes sooner).
  // It also bounds the write-ahead log a crash leaves to replay. Default: 32 MiB (64 measured
  // the same end to end and held 30-40 MiB more at a million queued; bench/README.md, section 14).
  size_t memtable_bytes = 32 << 20;
  // Table blocks cached for reads, one cache for all families (RocksDB's default, 8 MiB, was one
  // cache too); 0: none. Default: 8 MiB.
  size_t block_cache_bytes = 8 << 20;
  // Seals the settings under `sealed_setting_prefixes` at rest (storage/setting_seal.h): written
  // sealed, read opened, older plaintext ones sealed by the first writable open, which fails
  // with Corruption naming the first setting that does not open with this key. Unset: settings
  // are written and read as they are, and a sealed one read is FailedPrecondition. A secret.
  // Default: unset.
  std::optional<SecretsKey> secrets_key;
  // Settings that hold secrets: registered credentials and API-key hashes.
  std::vector<std::string> sealed_setting_prefixes = {"credentials/", "api_keys/"};
};

struct EnqueueResult {
  std::string id;
  bool created = true;  // false: the (tenant, idempotency key) was already stored
};

using StateCounts = std::array<uint64_t, kAllStates.size()>;  // indexed by state - 1
inline uint64_t CountOf(const StateCounts& c, DeliveryState s) {
  return c[static_cast<size_t>(s) - 1];
}

// The non-terminal deliveries of one (tenant, platform), summed over its destinations.
struct GroupCounts {
  std::string tenant;
  std::string platform;
  StateCounts counts{};  // terminal states read 0
};

// Counters from the disk layer, for metrics and benchmarks.
struct StoreStats {
  uint64_t writes = 0;     // write batches committed
  uint64_t wal_syncs = 0;  // fsyncs of the write-ahead log (group commit makes this < writes)
  // What the store takes on disk: the sizes of every file in its directory (table files, write-
  // ahead log, manifest, RocksDB's own log), summed when Stats() is called. A file that vanishes
  // while being counted (a compaction finishing) is left out.
  uint64_t disk_bytes = 0;
};

// What the store holds in this process's memory (MemoryUse), in bytes: what a million queued
// deliveries cost beside the loop's own state (bench/README.md, section 14).
struct StoreMemory {
  uint64_t memtables = 0;      // RocksDB's write buffers, active and awaiting flush
  uint64_t table_readers = 0;  // table files' index blocks held open
  uint64_t block_cache = 0;    // table blocks cached for reads
  uint64_t record_cache = 0;   // waiting records kept beside the disk (StoreOptions)
};

// How long finished work is kept (PurgeExpired). Each age is counted from the record's
// finished_ms, the time it became delivered, cancelled or dead (a replayed delivery counts from
// its latest finish); 0 keeps that class forever. docs/storage.md, "Retention".
struct RetentionPolicy {
  int64_t delivered_ms = 7LL * 24 * 3600 * 1000;  // Default: 7 days.
  int64_t cancelled_ms = 7LL * 24 * 3600 * 1000;  // Default: 7 days.
  int64_t dead_ms = 30LL * 24 * 3600 * 1000;      // Default: 30 days.
  // How long a finished delivery's idempotency key keeps answering with its id. A key is kept
  // while its delivery is live (queued, in flight, deferred), expires this long after the
  // delivery finished, and never outlives its record. Default: 24 hours.
  int64_t idempotency_ms = 24LL * 3600 * 1000;
};

// What one PurgeExpired call removed.
struct PurgeCounts {
  // Records removed with every index entry, payload and idempotency key they held.
  uint64_t delivered = 0;
  uint64_t cancelled = 0;
  uint64_t dead = 0;
  // Idempotency keys released by RetentionPolicy::idempotency_ms while their record stays.
  // Keys removed with their record are not counted here.
  uint64_t idempotency_keys = 0;
  // The call stopped at its `max`: more has expired (call again).
  bool more = false;
};

// What List returns: all filters that are set must match.
struct ListFilter {
  std::optional<DeliveryState> state;
  std::string tenant;
  std::string platform;
  std::string destination;
  std::string reason_prefix;
  // Creation time bounds, Unix ms: since_ms <= created_ms < until_ms. A since bound seeks (ids
  // start with their minting time); until is checked per record.
  std::optional<int64_t> since_ms;
  std::optional<int64_t> until_ms;
  std::string after_id;  // the cursor: ids strictly greater than this
  size_t limit = 100;
};

struct ListPage {
  std::vector<Delivery> deliveries;
  std::string next_cursor;  // empty when there is no more
};

// A record under a destination that cannot be read as a delivery: its bytes do not decode, it
// names another id or destination than the index that holds it, or the index entry has no
// record behind it. MoveCorruptToDead takes it out of the destination's way.
struct CorruptRecord {
  std::string id;
  std::string error;  // what is wrong with it, e.g. "delivery record is truncated ..."
};

// One destination's waiting work, oldest first (see PendingFor).
struct DestinationWork {
  std::string destination_key;  // DestinationKeyOf(...)
  std::vector<Delivery> deliveries;
  // Records of the destination PendingFor skipped because they cannot be read (in id order,
  // interleaved with `deliveries` in the index). Both count towards the call's `limit`.
  std::vector<CorruptRecord> corrupt;
};

// Whether the store takes writes. A store that hit a write or background fault it cannot get
// past by itself (RocksDB stops writing after a failed write-ahead-log write or flush, e.g. on a
// full disk) is unhealthy until Recover succeeds; meanwhile every write fails with Unavailable
// and reads go on.
struct StoreHealth {
  bool healthy = true;
  // What went wrong, a fixed token: "no_space", "space_limit", "io_error", "corruption" or
  // "error". Empty when healthy. Holds no path: safe for API answers.
  std::string reason;
  // What RocksDB was doing: "write", "flush", "compaction", "manifest", "memtable" or "reopen".
  std::string during;
  // RocksDB's own text, which may name files under the store's path: for the operator's log,
  // never for API answers.
  std::string detail;
};

// The durable delivery queue. Every method is one atomic change (a single WriteBatch in the
// RocksDB store, none for leases) and is safe to call from any thread; methods block on disk I/O,
// so the service calls them from its storage pool, never from the dispatcher loop. Times are
// wall-clock Unix ms supplied by the caller (the store reads no clock).
//
// Errors: InvalidArgument (bad input, named), NotFound, FailedPrecondition (illegal transition;
// any write to a store opened read-only), Corruption, IoError, Unavailable (transient: disk busy
// or full), Busy (store in use).
class QueueStore {
 public:
  virtual ~QueueStore() = default;

  // Stores one delivery as queued and due at `now_ms`. Returns once the write is synced to
  // disk; concurrent callers share one sync. A repeated (tenant, idempotency key) returns the
  // first id with created = false and writes nothing.
  virtual Result<EnqueueResult> Enqueue(const NewDelivery& d, int64_t now_ms) = 0;

  // Stores many in one synced write. Items are validated one by one: a bad item gets its own
  // error and the others are still stored. Fails as a whole only when the write fails.
  virtual Result<std::vector<Result<EnqueueResult>>> EnqueueBatch(
      const std::vector<NewDelivery>& ds, int64_t now_ms) = 0;

  virtual Result<Delivery> Get(const std::string& id) = 0;

  // The deliveries of `ids` that exist, in the order of `ids` (those not found are left out).
  // Fails as a whole on any other error. This default asks Get for each; a store with a round
  // trip per read answers in one.
  virtual Result<std::vector<Delivery>> GetMany(const std::vector<std::string>& ids) {
    std::vector<Delivery> out;
    for (const std::string& id : ids) {
      Result<Delivery> d = Get(id);
      if (d) {
        out.push_back(std::move(*d));
      } else if (d.error().code() != Status::Code::kNotFound) {
        return d.error();
      }
    }
    return out;
  }

  // Moves one delivery to another state (state_machine.h), updating every index in the same
  // write. Returns the delivery as stored after the change.
  //
  // A lease (a move to in_flight) is not durable: a store may keep it in memory only, every
  // read of this store seeing it; after a crash the delivery is waiting again (at-least-once).
  // A leased delivery cannot be cancelled (FailedPrecondition naming in_flight).
  virtual Result<Delivery> Apply(const std::string& id, const StateChange& change) = 0;

  // Applies many changes in one write: each is checked on its own (a bad one gets its own
  // error, the others still apply), in order, so a later change of the same id sees the
  // earlier one. The write is synced; leases (to in_flight) are not written (see Apply), so a
  // batch of leases alone writes nothing. Fails as a whole only when the write fails.
  using IdChange = std::pair<std::string, StateChange>;
  virtual Result<std::vector<Result<Delivery>>> ApplyBatch(
      const std::vector<IdChange>& changes) = 0;

  // Moves up to `max` waiting deliveries due at or before `now_ms` to in_flight (leases, see
  // Apply), in due order, and returns them.
  virtual Result<std::vector<Delivery>> LeaseDue(int64_t now_ms, size_t max) = 0;

  // Destinations that have non-terminal work, in key order, starting after `after_key`.
  virtual Result<std::vector<std::string>> ListDestinations(const std::string& after_key,
                                                            size_t limit) = 0;

  // A destination's non-terminal deliveries in enqueue order, after id `after_id`: at most
  // `limit` entries in `deliveries` and `corrupt` together, so fewer means the destination has
  // no more. A record that cannot be read is reported in `corrupt` and skipped, never an error
  // of the whole call.
  virtual Result<DestinationWork> PendingFor(const std::string& destination_key,
                                             const std::string& after_id, size_t limit) = 0;

  // Takes a record PendingFor reported as corrupt out of its destination's way: rewrites it as
  // a dead delivery with reason "corrupt_record: <what is wrong>", its tenant, platform,
  // credential and destination taken from `destination_key`, its payload the raw bytes found
  // (kept for inspection; empty when there were none), created at the time its id carries, and
  // removes its waiting index entries and counts. Returns the dead delivery. FailedPrecondition
  // when the record reads as a delivery of that destination (nothing to repair) or is in
  // flight; NotFound when the destination does not hold the id. Its idempotency key, which
  // lived in the unreadable bytes, keeps pointing at the id (a repeat of the key finds the dead
  // delivery) until the entry is overwritten.
  virtual Result<Delivery> MoveCorruptToDead(const std::string& id,
                                             const std::string& destination_key,
                                             int64_t now_ms) = 0;

  virtual Result<ListPage> List(const ListFilter& filter) = 0;

  // Exact counts per state, read without scanning.
  virtual Result<StateCounts> Counts() = 0;

  // Non-terminal deliveries (queued, in_flight, deferred) of one tenant, read without scanning.
  virtual Result<uint64_t> TenantBacklog(const std::string& tenant) = 0;

  // Counts per non-terminal state of each destination (terminal states read 0), read without
  // scanning, in the order of `destination_keys`.
  virtual Result<std::vector<StateCounts>> DestinationCounts(
      const std::vector<std::string>& destination_keys) = 0;

  // Counts per non-terminal state of every (tenant, platform) with such deliveries, summed from
  // the per-destination counters (no record read), ordered by tenant then platform. The RocksDB
  // store keeps the sums in memory as its counters change (a read copies one entry per group);
  // the PostgreSQL store sums the counter rows.
  virtual Result<std::vector<GroupCounts>> BacklogByTenantPlatform() = 0;

  // The groups of BacklogByTenantPlatform that are `tenant`'s, by platform: its backlog on each
  // platform it has one on, at a cost that grows with its own groups (RocksDB) or destinations
  // (PostgreSQL), not with every tenant's. The default filters BacklogByTenantPlatform.
  virtual Result<std::vector<GroupCounts>> TenantBacklogByPlatform(const std::string& tenant) {
    Result<std::vector<GroupCounts>> all = BacklogByTenantPlatform();
    if (!all) {
      return all.error();
    }
    std::vector<GroupCounts> out;
    for (GroupCounts& group : *all) {
      if (group.tenant == tenant) {
        out.push_back(std::move(group));
      }
    }
    return out;
  }

  // Counts per state found by scanning every record: a consistency check for tests and `fsck`.
  virtual Result<StateCounts> ScanCounts() = 0;

  // The bytes the tenant's delivery records take in the store (docs/storage.md, "Stored bytes"):
  // each record's id and encoded bytes (payload, history, headers, charges and every other
  // field), whatever its state, dead and other finished ones included until retention or Purge
  // removes them. Index entries are not counted. Exact and durable: moved in the same write as
  // every record write or removal, read without scanning. 0 for a tenant with no records.
  virtual Result<uint64_t> TenantStoredBytes(const std::string& tenant) = 0;

  // The stored bytes per tenant found by scanning every record (tenants with none left out): a
  // consistency check of TenantStoredBytes for tests and `fsck`. Corruption when a record does
  // not decode.
  virtual Result<std::map<std::string, uint64_t>> ScanStoredBytes() = 0;

  // Applies `policy` at `now_ms` to at most `max` entries of the retention index, oldest first
  // per class (delivered, cancelled, dead records, then idempotency keys), in one write that is
  // not synced (a purge lost in a crash is redone by the next call): removes each record that
  // finished before `now_ms - age` of its state, with its index entries and its idempotency key,
  // and releases each idempotency key of a delivery that finished before
  // `now_ms - policy.idempotency_ms`. A live delivery is never touched: the index holds only
  // finished ones, and each is checked under its id's lock. Call it again while `more` is set;
  // callers bound their latency by `max` (one call holds the locks of its ids for its write).
  // One purger at a time (a second caller waits). InvalidArgument when `max` is 0.
  virtual Result<PurgeCounts> PurgeExpired(const RetentionPolicy& policy, int64_t now_ms,
                                           size_t max) = 0;

  // Removes one terminal record (e.g. a dead one an operator gave up on), with its index entries
  // and its idempotency key (when the key still names it).
  virtual Status Purge(const std::string& id) = 0;

  virtual StoreStats Stats() = 0;
  // Cheap, no I/O. A store that keeps nothing in memory reads all zero.
  virtual StoreMemory MemoryUse() { return {}; }

  // Whether the store takes writes now (see StoreHealth). Cheap, no I/O.
  virtual StoreHealth Health() = 0;
  // Tries to make an unhealthy store take writes again; Ok when it does (or already did). Blocks
  // on disk I/O (it may flush or reopen the database): the service calls it from its storage
  // pool, with a back-off, while Health() says unhealthy. The error says why it still cannot
  // (e.g. the disk is still full); its text may name files under the store's path.
  virtual Status Recover() = 0;

  // Small durable settings beside the deliveries (operator overrides, registered credentials),
  // written synced. An empty value deletes the key.
  virtual Status PutSetting(const std::string& key, const std::string& value) = 0;
  // Every setting whose key starts with `prefix`, in key order.
  virtual Result<std::vector<std::pair<std::string, std::string>>> ListSettings(
      const std::string& prefix) = 0;
  // The settings' version: a number that grows with every PutSetting that returned Ok (whether
  // or not it changed a value) and with nothing else, so that a node learns cheaply whether the
  // settings changed since it read them: one read, no scan. On a store several nodes share (the
  // PostgreSQL store) it is the store's, moved in the same transaction as the setting by every
  // store object on it, and durable; read it before ListSettings, and settings it lists are at
  // least as new as the version. The RocksDB store, which one process opens alone, counts this
  // object's writes in memory (from 0 at each open). FailedPrecondition once closed; the store's
  // errors otherwise (Unavailable while the server cannot be reached).
  virtual Result<uint64_t> SettingsVersion() = 0;

  // The slices of the tenant's quota `quota` still counting at `now_ms`, as the stored
  // deliveries charged them (NewDelivery::charges; docs/storage.md, "Quotas"): exact, durable,
  // moved with each delivery's state in the same write. Memory only, no I/O and no error: cheap
  // enough for the loop. Empty for a quota never charged.
  virtual pacing::SlidingWindowCounter QuotaUsage(const std::string& tenant,
                                                  const std::string& quota, int64_t now_ms) = 0;

  // Which destinations this node may dispatch when several nodes serve the store (the PostgreSQL
  // store with shard leases); nullptr for a store of one node, which owns them all. Owned by the
  // store, valid until Close. With it, ListDestinations and LeaseDue return only the work of
  // shards this node may dispatch.
  virtual ShardOwnership* ownership() { return nullptr; }

  // Flushes and closes; later calls fail. The destructor closes too, ignoring errors.
  virtual Status Close() = 0;
};

// Checks a NewDelivery against `options` before anything is written. InvalidArgument names the
// field: empty or oversized fields, control characters in names, cost 0, payload over the cap.
Status ValidateNewDelivery(const NewDelivery& d, const StoreOptions& options);

}  // namespace egress::storage
