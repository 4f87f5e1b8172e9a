#pragma once

// The PostgreSQL QueueStore. Included only by storage/pg_queue_store*.cc; everyone else uses
// OpenPostgresQueueStore (pg_queue_store.h).

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/counter_deltas.h"
#include "storage/delivery_id.h"
#include "storage/destination_seal.h"
#include "storage/lease_table.h"
#include "storage/pg_pool.h"
#include "storage/pg_queue_store.h"
#include "storage/queue_store.h"
#include "storage/quota_table.h"

namespace egress::storage {

// One delivery row as written: the record and the columns the indexes use.
struct PgRow {
  std::string id;
  std::string tenant;
  std::string dest_key;  // as stored
  int64_t shard = 0;
  int64_t state = 0;
  int64_t due_ms = 0;
  int64_t finished_ms = 0;
  std::optional<std::string> idem_key;
  std::string record;
};

// One transaction being built: rows, idempotency entries, counter deltas, and what changes in
// memory once it committed.
struct PgWrite {
  // The idempotency entry (tenant, key) while it names `id`; finished_ms -1 for NULL.
  struct Idem {
    std::string tenant;
    std::string key;
    std::string id;
    int64_t finished_ms = -1;
  };
  std::vector<PgRow> inserts;
  std::map<std::string, PgRow> updates;  // by id: the newest version of each
  std::vector<std::string> deletes;      // ids
  std::vector<Idem> idem_marks;          // set finished_ms where the entry names id
  std::vector<Idem> idem_releases;       // delete where the entry names id
  CounterDeltas counters;                // written to egress_counters
  CounterDeltas quota;                   // quota slices: written too, and applied to quotas_
  CounterDeltas memory_only;             // lease moves: this store's memory only
  std::vector<std::pair<std::string, std::optional<Lease>>> leases;  // nullopt: drop
  // Rows changed by statements of their own (the retention purge's).
  bool direct = false;

  // Whether the transaction changes the database: what Stats().writes counts once committed.
  bool writes() const {
    return direct || !inserts.empty() || !updates.empty() || !deletes.empty() ||
           !idem_marks.empty() || !idem_releases.empty() || !counters.deltas().empty() ||
           !quota.deltas().empty();
  }
};

// Decodes a record and opens its destination with `seal`: Corruption naming what is wrong.
Result<Delivery> DecodePgRecord(std::string_view bytes, const DestinationSeal& seal);

class PgQueueStore final : public QueueStore {
 public:
  PgQueueStore(StoreOptions options, std::unique_ptr<PgPool> pool, uint64_t seed,
               const std::string& newest_id);
  ~PgQueueStore() override;

  Result<EnqueueResult> Enqueue(const NewDelivery& d, int64_t now_ms) override;
  Result<std::vector<Result<EnqueueResult>>> EnqueueBatch(const std::vector<NewDelivery>& ds,
                                                          int64_t now_ms) override;
  Result<Delivery> Get(const std::string& id) override;
  Result<std::vector<Delivery>> GetMany(const std::vector<std::string>& ids) override;
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
  StoreHealth Health() override;
  Status Recover() override;
  Status PutSetting(const std::string& key, const std::string& value) override;
  Result<std::vector<std::pair<std::string, std::string>>> ListSettings(
      const std::string& prefix) override;
  Result<uint64_t> SettingsVersion() override;
  pacing::SlidingWindowCounter QuotaUsage(const std::string& tenant, const std::string& quota,
                                          int64_t now_ms) override;
  ShardOwnership* ownership() override { return shards_.get(); }
  Status Close() override;

  // Starts this node's shard leases (OpenPostgresQueueStore, with pg.shard_leases).
  Status StartShardLeases(const PostgresStoreOptions& pg, const ShardLeaseOptions& options);

  // At open: seals the plaintext settings under a sealed prefix and checks the sealed ones open;
  // checks the destinations_sealed marker against the key (pg_queue_store_settings.cc).
  Status SealSettings();
  Status CheckDestinationSeal();
  // Reads the quota slices into memory (at open and after Recover).
  Status LoadQuotas();

 private:
  static constexpr size_t kStripes = 32;

  // Held shared by every call, exclusively by Close (which drops the pool).
  std::shared_lock<std::shared_mutex> UsePool() const {
    return std::shared_lock<std::shared_mutex>(pool_mu_);
  }
  // FailedPrecondition once closed. Call under UsePool.
  Status CheckOpen() const;
  // A pool connection, or why there is none. Call under UsePool, after CheckOpen.
  Result<PgPool::Use> Take() { return pool_->Take(); }
  // What most calls start with: the pool held open (UsePool), checked open (CheckOpen) and one
  // of its connections (Take), usable where a PgPool::Use is. The lock outlives the connection.
  struct Held {
    std::shared_lock<std::shared_mutex> use;
    PgPool::Use c;
    operator PgPool::Use&() { return c; }  // NOLINT(google-explicit-constructor)
    PgConnection* operator->() const { return c.operator->(); }
    size_t index() const { return c.index(); }
  };
  Result<Held> Hold() {
    auto use = UsePool();
    if (Status s = CheckOpen(); !s.ok()) {
      return s;
    }
    auto c = Take();
    if (!c) {
      return c.error();
    }
    return Held{std::move(use), std::move(*c)};
  }
  // Runs one statement; an error that lost the connection turns the store unhealthy.
  Result<PgResult> Q(PgPool::Use& c, std::string_view sql, const PgParams& params = PgParams());
  Status Run(PgPool::Use& c, std::string_view sql);
  // Runs `body` between BEGIN and COMMIT (ROLLBACK when it fails), then applies w's memory
  // changes once the COMMIT returned. A transaction that changed nothing (w.writes() false: a
  // batch of leases, refused changes, repeated keys) is not counted in Stats().writes.
  Status Transact(PgPool::Use& c, PgWrite& w, const std::function<Status()>& body);
  // Writes w's rows, idempotency entries and counters (inside Transact's body).
  Status WriteRows(PgPool::Use& c, PgWrite& w);
  Status WriteCounters(PgPool::Use& c, const PgWrite& w);
  // Applies w's memory changes: counters of leases, quota slices, the lease table.
  void ApplyMemory(PgWrite& w);

  std::mutex& IdStripe(std::string_view id);
  Result<Delivery> Decode(std::string_view bytes) const { return DecodePgRecord(bytes, seal_); }
  // Adds to `w` what turns `before` into `after` (null `before`: a new row; null `after`: the
  // row goes), as the RocksDB store's Stage: the row, idempotency expiry marks, counters (the
  // tenant's stored bytes from `before_bytes` to the new size). Returns that size.
  uint64_t Stage(PgWrite& w, const Delivery* before, const Delivery* after, uint64_t before_bytes);
  // Adds to `w.memory_only` the counter moves of a lease starting or ending.
  void StageInMemory(PgWrite& w, const Delivery& from, const Delivery& to) const;
  // The record of `id` as readers see it (the lease, else the row).
  Result<Delivery> ReadCurrent(PgPool::Use& c, const std::string& id, uint64_t* bytes = nullptr);
  // Sums of the counters with these keys (absent: 0), plus this store's lease moves.
  Result<CounterMap> SumCounters(PgPool::Use& c, const std::vector<std::string>& keys);
  // Sums of every counter whose key starts with `prefix` (not 0), without lease moves.
  Result<CounterMap> SumCountersWithPrefix(PgPool::Use& c, std::string_view prefix);
  // Calls fn(id, record bytes) for every row, in id order, in chunks.
  Status ScanRecords(PgPool::Use& c,
                     const std::function<Status(std::string_view, std::string_view)>& fn);
  // Deletes at most `max` records of `state` finished before `cutoff_ms` (with their idempotency
  // entries), adding their counter moves to `w`; `more` when the limit stopped it.
  Result<uint64_t> PurgeClass(PgPool::Use& c, PgWrite& w, DeliveryState state, int64_t cutoff_ms,
                              size_t max, bool& more);
  // After a purge's transaction: deletes up to `max` quota slice rows that stopped counting an
  // hour before `now_ms` and up to `max` destination counter rows at 0, each in a transaction of
  // its own that never waits for a lock. True when the quota slices filled `max` (more left).
  Result<bool> PruneCounters(PgPool::Use& c, int64_t now_ms, size_t max);

  // Whether this store holds a lease (in memory) of a delivery of `shard`: the shard is busy, not
  // to be handed over yet.
  bool HasLeasesIn(int shard);
  // Inside a write's transaction: wakes the owners of the shards the write makes work waiting in
  // (NOTIFY egress_wake with the ids), when they are other nodes.
  Status NotifyWaiting(PgPool::Use& c, const PgWrite& w);
  // The check of a write as owner (StateChange::as_owner, a lease held): the shard's row, read
  // FOR KEY SHARE in the transaction, names this node with the epoch it holds. Ok without shard
  // leases.
  Status CheckOwner(const std::string& id, int64_t shard, std::string_view owner,
                    int64_t epoch) const;

  const StoreOptions options_;
  const DestinationSeal seal_;
  std::unique_ptr<PgPool> pool_;
  mutable std::shared_mutex pool_mu_;
  const int slot_base_;  // this store's first counter slot
  DeliveryIdGenerator ids_;
  std::array<std::mutex, kStripes> id_stripes_;
  std::mutex lease_mu_;  // one leaser at a time
  std::mutex purge_mu_;  // one purger at a time
  LeaseTable leases_;
  // The counter moves of this store's leases (a lease is not written): added to every read.
  mutable std::mutex lease_counts_mu_;
  CounterMap lease_counts_;
  QuotaTable quotas_;
  std::atomic<uint64_t> commits_{0};  // committed transactions that changed something
  bool closed_ = false;
  std::unique_ptr<PgShardLeases> shards_;  // several nodes serving the store; null: one
};

}  // namespace egress::storage
