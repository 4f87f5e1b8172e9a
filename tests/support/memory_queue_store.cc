#include "tests/support/memory_queue_store.h"

#include <algorithm>

#include <fmt/format.h>

#include "storage/delivery_codec.h"
#include "storage/state_machine.h"

namespace egress::storage {

MemoryQueueStore::MemoryQueueStore(StoreOptions options, uint64_t id_seed)
    : options_(std::move(options)), ids_(id_seed, "") {}

Status MemoryQueueStore::CheckOpen() const {
  return closed_ ? Status::FailedPrecondition("store is closed") : Status::Ok();
}

Status MemoryQueueStore::CheckWritable() const {
  if (!health_.healthy) {
    return Status::Unavailable(fmt::format("store refuses writes ({}); retrying", health_.reason));
  }
  return CheckOpen();
}

Result<EnqueueResult> MemoryQueueStore::Enqueue(const NewDelivery& d, int64_t now_ms) {
  Result<std::vector<Result<EnqueueResult>>> batch = EnqueueBatch({d}, now_ms);
  if (!batch) {
    return batch.error();
  }
  return std::move(batch->front());
}

Result<std::vector<Result<EnqueueResult>>> MemoryQueueStore::EnqueueBatch(
    const std::vector<NewDelivery>& ds, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  std::vector<Result<EnqueueResult>> results;
  results.reserve(ds.size());
  for (const NewDelivery& in : ds) {
    if (Status s = ValidateNewDelivery(in, options_); !s.ok()) {
      results.emplace_back(std::move(s));
      continue;
    }
    if (!in.idempotency_key.empty()) {
      auto it = idempotency_.find({in.tenant, in.idempotency_key});
      if (it != idempotency_.end()) {
        results.emplace_back(EnqueueResult{it->second, false});
        continue;
      }
    }
    Delivery d{.id = id_prefix_ + ids_.Next(now_ms),
               .tenant = in.tenant,
               .platform = in.platform,
               .destination = in.destination,
               .credential = in.credential,
               .payload = in.payload,
               .idempotency_key = in.idempotency_key,
               .ordering_key = in.ordering_key,
               .cost = in.cost,
               .created_ms = now_ms,
               .traceparent = in.traceparent,
               .state = DeliveryState::kQueued,
               .next_attempt_ms = now_ms,
               .updated_ms = now_ms};
    if (!in.idempotency_key.empty()) {
      idempotency_[{in.tenant, in.idempotency_key}] = d.id;
    }
    results.emplace_back(EnqueueResult{d.id, true});
    deliveries_.emplace(d.id, std::move(d));
  }
  ++writes_;
  return results;
}

Result<Delivery> MemoryQueueStore::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  auto it = deliveries_.find(id);
  if (it == deliveries_.end()) {
    return Status::NotFound(fmt::format("delivery {} not found", id));
  }
  return it->second;
}

Result<Delivery> MemoryQueueStore::Apply(const std::string& id, const StateChange& change) {
  Result<std::vector<Result<Delivery>>> batch = ApplyBatch({{id, change}});
  if (!batch) {
    return batch.error();
  }
  return std::move(batch->front());
}

Result<std::vector<Result<Delivery>>> MemoryQueueStore::ApplyBatch(
    const std::vector<IdChange>& changes) {
  std::lock_guard<std::mutex> lock(mu_);
  ++apply_batches_;
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  if (apply_fault_ && apply_fault_->times > 0) {
    const bool matches = !apply_fault_->only_to ||
                         std::any_of(changes.begin(), changes.end(), [&](const IdChange& c) {
                           return c.second.to == *apply_fault_->only_to;
                         });
    if (matches) {
      Status failed = apply_fault_->status;
      if (--apply_fault_->times == 0) {
        apply_fault_.reset();
      }
      return failed;
    }
  }
  std::vector<Result<Delivery>> results;
  results.reserve(changes.size());
  for (const auto& [id, change] : changes) {
    auto it = deliveries_.find(id);
    if (it == deliveries_.end()) {
      results.emplace_back(Status::NotFound(fmt::format("delivery {} not found", id)));
      continue;
    }
    Delivery after = it->second;
    if (Status s = ApplyChange(change, options_.history_limit, after); !s.ok()) {
      results.emplace_back(std::move(s));
      continue;
    }
    it->second = std::move(after);
    results.emplace_back(it->second);
  }
  ++writes_;
  return results;
}

Result<std::vector<Delivery>> MemoryQueueStore::LeaseDue(int64_t now_ms, size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::vector<Delivery*> due;
  for (auto& [id, d] : deliveries_) {
    if (IsWaiting(d.state) && d.next_attempt_ms <= now_ms) {
      due.push_back(&d);
    }
  }
  // Earliest due first; equal times in id order (the sort is stable over the id-ordered map).
  std::stable_sort(due.begin(), due.end(), [](const Delivery* a, const Delivery* b) {
    return a->next_attempt_ms < b->next_attempt_ms;
  });
  if (due.size() > max) {
    due.resize(max);
  }
  std::vector<Delivery> leased;
  const StateChange change{.to = DeliveryState::kInFlight, .at_ms = now_ms};
  for (Delivery* d : due) {
    if (Status s = ApplyChange(change, options_.history_limit, *d); !s.ok()) {
      return s;
    }
    leased.push_back(*d);
  }
  return leased;
}

Result<std::vector<std::string>> MemoryQueueStore::ListDestinations(const std::string& after_key,
                                                                    size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::vector<std::string> keys;
  for (const auto& [id, d] : deliveries_) {
    if (!IsTerminal(d.state)) {
      std::string key = DestinationKeyOf(d);
      if (key > after_key) {
        keys.push_back(std::move(key));
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  if (keys.size() > limit) {
    keys.resize(limit);
  }
  return keys;
}

Result<DestinationWork> MemoryQueueStore::PendingFor(const std::string& destination_key,
                                                     const std::string& after_id, size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  ++pending_for_calls_;
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  if (pending_for_fault_times_ > 0) {
    --pending_for_fault_times_;
    return pending_for_fault_;
  }
  DestinationWork work{destination_key, {}, {}};
  for (auto it = deliveries_.upper_bound(after_id);
       it != deliveries_.end() && work.deliveries.size() + work.corrupt.size() < limit; ++it) {
    if (IsTerminal(it->second.state) || DestinationKeyOf(it->second) != destination_key) {
      continue;
    }
    if (auto bad = corrupt_.find(it->first); bad != corrupt_.end()) {
      work.corrupt.push_back({it->first, bad->second});
    } else {
      work.deliveries.push_back(it->second);
    }
  }
  return work;
}

Result<Delivery> MemoryQueueStore::MoveCorruptToDead(const std::string& id,
                                                     const std::string& destination_key,
                                                     int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  auto it = deliveries_.find(id);
  if (it == deliveries_.end() || DestinationKeyOf(it->second) != destination_key) {
    return Status::NotFound(fmt::format("destination holds no delivery {}", id));
  }
  auto bad = corrupt_.find(id);
  if (bad == corrupt_.end()) {
    return Status::FailedPrecondition(
        fmt::format("delivery {} reads as a delivery of its destination; nothing to repair", id));
  }
  Delivery& d = it->second;
  d.state = DeliveryState::kDead;
  d.reason = "corrupt_record: " + bad->second;
  d.updated_ms = now_ms;
  d.finished_ms = now_ms;
  corrupt_.erase(bad);
  ++writes_;
  return d;
}

Result<ListPage> MemoryQueueStore::List(const ListFilter&) {
  return Status::FailedPrecondition("MemoryQueueStore does not implement List");
}

StateCounts MemoryQueueStore::CountLocked() const {
  StateCounts counts{};
  for (const auto& [id, d] : deliveries_) {
    ++counts[static_cast<size_t>(d.state) - 1];
  }
  return counts;
}

Result<StateCounts> MemoryQueueStore::Counts() {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  return CountLocked();
}

Result<uint64_t> MemoryQueueStore::TenantBacklog(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  uint64_t n = 0;
  for (const auto& [id, d] : deliveries_) {
    n += d.tenant == tenant && !IsTerminal(d.state) ? 1 : 0;
  }
  return n;
}

Result<std::vector<StateCounts>> MemoryQueueStore::DestinationCounts(
    const std::vector<std::string>& destination_keys) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::map<std::string, StateCounts> by_key;
  for (const auto& [id, d] : deliveries_) {
    if (!IsTerminal(d.state)) {
      ++by_key[DestinationKeyOf(d)][static_cast<size_t>(d.state) - 1];
    }
  }
  std::vector<StateCounts> out;
  for (const std::string& key : destination_keys) {
    auto it = by_key.find(key);
    out.push_back(it == by_key.end() ? StateCounts{} : it->second);
  }
  return out;
}

Result<std::vector<GroupCounts>> MemoryQueueStore::BacklogByTenantPlatform() {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::map<std::pair<std::string, std::string>, StateCounts> groups;
  for (const auto& [id, d] : deliveries_) {
    if (!IsTerminal(d.state)) {
      ++groups[{d.tenant, d.platform}][static_cast<size_t>(d.state) - 1];
    }
  }
  std::vector<GroupCounts> out;
  for (auto& [key, counts] : groups) {
    out.push_back({key.first, key.second, counts});
  }
  return out;
}

Result<StateCounts> MemoryQueueStore::ScanCounts() { return Counts(); }

Result<uint64_t> MemoryQueueStore::TenantStoredBytes(const std::string& tenant) {
  Result<std::map<std::string, uint64_t>> bytes = ScanStoredBytes();
  if (!bytes) {
    return bytes.error();
  }
  auto it = bytes->find(tenant);
  return it == bytes->end() ? uint64_t{0} : it->second;
}

Result<std::map<std::string, uint64_t>> MemoryQueueStore::ScanStoredBytes() {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::map<std::string, uint64_t> bytes;
  for (const auto& [id, d] : deliveries_) {
    bytes[d.tenant] += id.size() + EncodeDelivery(d).size();
  }
  return bytes;
}

Result<PurgeCounts> MemoryQueueStore::PurgeExpired(const RetentionPolicy& policy, int64_t now_ms,
                                                   size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  if (max == 0) {
    return Status::InvalidArgument("purge: max must be at least 1");
  }
  auto expired = [now_ms](int64_t age, int64_t finished_ms) {
    return age > 0 && finished_ms < now_ms - age;
  };
  // Whether d's idempotency key still names d (after it expired it may name a newer delivery).
  auto holds_key = [this](const Delivery& d) {
    auto it = idempotency_.find({d.tenant, d.idempotency_key});
    return !d.idempotency_key.empty() && it != idempotency_.end() && it->second == d.id;
  };
  auto release = [&](const Delivery& d) {
    if (holds_key(d)) {
      idempotency_.erase({d.tenant, d.idempotency_key});
    }
  };
  PurgeCounts counts;
  size_t examined = 0;
  for (auto it = deliveries_.begin(); it != deliveries_.end();) {
    const Delivery& d = it->second;
    const int64_t age = d.state == DeliveryState::kDelivered   ? policy.delivered_ms
                        : d.state == DeliveryState::kCancelled ? policy.cancelled_ms
                        : d.state == DeliveryState::kDead      ? policy.dead_ms
                                                               : 0;
    const bool purge = expired(age, d.finished_ms);
    const bool key =
        IsTerminal(d.state) && expired(policy.idempotency_ms, d.finished_ms) && holds_key(d);
    if ((purge || key) && examined == max) {
      counts.more = true;
      break;
    }
    if (purge) {
      ++examined;
      ++(d.state == DeliveryState::kDelivered   ? counts.delivered
         : d.state == DeliveryState::kCancelled ? counts.cancelled
                                                : counts.dead);
      release(d);
      it = deliveries_.erase(it);
      continue;
    }
    if (key) {
      ++examined;
      ++counts.idempotency_keys;
      release(d);
    }
    ++it;
  }
  return counts;
}

Status MemoryQueueStore::Purge(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  auto it = deliveries_.find(id);
  if (it == deliveries_.end()) {
    return Status::NotFound(fmt::format("delivery {} not found", id));
  }
  if (!IsTerminal(it->second.state)) {
    return Status::FailedPrecondition(
        fmt::format("delivery {} is {}; only finished deliveries can be purged", id,
                    StateName(it->second.state)));
  }
  if (auto key = idempotency_.find({it->second.tenant, it->second.idempotency_key});
      key != idempotency_.end() && key->second == id) {
    idempotency_.erase(key);
  }
  deliveries_.erase(it);
  return Status::Ok();
}

StoreStats MemoryQueueStore::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return {.writes = writes_, .wal_syncs = 0};
}

StoreHealth MemoryQueueStore::Health() {
  std::lock_guard<std::mutex> lock(mu_);
  return health_;
}

Status MemoryQueueStore::Recover() {
  std::lock_guard<std::mutex> lock(mu_);
  if (health_.healthy) {
    return Status::Ok();
  }
  if (failed_recovers_ > 0) {
    --failed_recovers_;
    return Status::IoError("still failing");
  }
  health_ = StoreHealth{};
  return Status::Ok();
}

Status MemoryQueueStore::PutSetting(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  if (value.empty()) {
    settings_.erase(key);
  } else {
    settings_[key] = value;
  }
  ++settings_version_;
  return Status::Ok();
}

Result<uint64_t> MemoryQueueStore::SettingsVersion() {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  return settings_version_;
}

Result<std::vector<std::pair<std::string, std::string>>> MemoryQueueStore::ListSettings(
    const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = settings_.lower_bound(prefix);
       it != settings_.end() && it->first.starts_with(prefix); ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

Status MemoryQueueStore::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  return Status::Ok();
}

void MemoryQueueStore::FailApplies(ApplyFault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  apply_fault_ = std::move(fault);
}

void MemoryQueueStore::PrefixIdsForTest(std::string prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  id_prefix_ = std::move(prefix);
}

void MemoryQueueStore::FailPendingFor(Status status, int times) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_for_fault_ = std::move(status);
  pending_for_fault_times_ = times;
}

void MemoryQueueStore::CorruptForTest(const std::string& id, std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  corrupt_[id] = std::move(error);
}

void MemoryQueueStore::MakeUnhealthy(std::string reason, int failed_recovers) {
  std::lock_guard<std::mutex> lock(mu_);
  health_ = {.healthy = false, .reason = std::move(reason), .during = "write", .detail = "test"};
  failed_recovers_ = failed_recovers;
}

size_t MemoryQueueStore::apply_batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return apply_batches_;
}

size_t MemoryQueueStore::pending_for_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_for_calls_;
}

}  // namespace egress::storage
