#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/delivery_id.h"
#include "storage/queue_store.h"

namespace egress::storage {

// A QueueStore in memory, over a std::map in id order, for tests of what sits above the store
// (the delivery loop). State changes follow storage/state_machine.h exactly (ApplyChange), so a
// change the RocksDB store refuses is refused here too. Nothing is durable, so a lease is an
// ordinary change; "restarting" means building a new loop over the same store.
//
// Implemented: Enqueue, EnqueueBatch, Get, Apply, ApplyBatch, LeaseDue, ListDestinations,
// PendingFor, MoveCorruptToDead, Counts, TenantBacklog, DestinationCounts,
// BacklogByTenantPlatform, ScanCounts, TenantStoredBytes and ScanStoredBytes (each record's id
// and EncodeDelivery bytes, summed on every call), PurgeExpired, Purge, Stats, Health, Recover,
// PutSetting, ListSettings, SettingsVersion, Close. Not implemented: List (FailedPrecondition).
//
// Faults are injected as leveldb's SpecialEnv does, by setting fields: the next calls fail as a
// whole, with nothing applied. Thread-safe (one mutex), like every QueueStore.
class MemoryQueueStore final : public QueueStore {
 public:
  explicit MemoryQueueStore(StoreOptions options = {}, uint64_t id_seed = 1);

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
  // Charges nothing: always empty.
  pacing::SlidingWindowCounter QuotaUsage(const std::string&, const std::string&,
                                          int64_t) override {
    return {};
  }
  Result<std::vector<std::pair<std::string, std::string>>> ListSettings(
      const std::string& prefix) override;
  Result<uint64_t> SettingsVersion() override;
  Status Close() override;

  // A fault for the next matching ApplyBatch (or Apply) calls: each fails as a whole with
  // `status` and applies nothing. Matches every batch when `only_to` is unset, otherwise only a
  // batch with a change to that state (e.g. kDelivered: an outcome write, not a lease).
  struct ApplyFault {
    Status status;
    int times = 1;
    std::optional<DeliveryState> only_to;
  };
  void FailApplies(ApplyFault fault);
  // The next `times` PendingFor calls fail with `status`.
  void FailPendingFor(Status status, int times = 1);
  // The record of `id` reads as corrupt from now on, as a RocksDB record that no longer decodes:
  // PendingFor reports it in `corrupt` with `error` (and skips it) until MoveCorruptToDead.
  void CorruptForTest(const std::string& id, std::string error);
  // Unhealthy with `reason` (StoreHealth::reason): every write fails with Unavailable, reads go
  // on, until Recover, which fails `failed_recovers` times first (with IoError).
  void MakeUnhealthy(std::string reason, int failed_recovers = 0);

  // Ids made from now on start with `prefix` (they still sort in enqueue order): ids no store of
  // ours makes, for what must take any id (e.g. one packing in no PackedId form).
  void PrefixIdsForTest(std::string prefix);

  // Calls seen, failed ones included.
  size_t apply_batches() const;
  size_t pending_for_calls() const;

 private:
  // Every state count; callers hold mu_.
  StateCounts CountLocked() const;
  Status CheckOpen() const;
  // CheckOpen, and Unavailable while unhealthy. Callers hold mu_.
  Status CheckWritable() const;

  const StoreOptions options_;
  mutable std::mutex mu_;
  DeliveryIdGenerator ids_;
  std::string id_prefix_;
  std::map<std::string, Delivery> deliveries_;                              // by id: enqueue order
  std::map<std::pair<std::string, std::string>, std::string> idempotency_;  // (tenant, key) -> id
  std::map<std::string, std::string> settings_;
  uint64_t settings_version_ = 0;               // PutSettings that returned Ok
  std::map<std::string, std::string> corrupt_;  // id -> error
  StoreHealth health_;
  int failed_recovers_ = 0;
  std::optional<ApplyFault> apply_fault_;
  Status pending_for_fault_;
  int pending_for_fault_times_ = 0;
  size_t apply_batches_ = 0;
  size_t pending_for_calls_ = 0;
  uint64_t writes_ = 0;
  bool closed_ = false;
};

}  // namespace egress::storage
