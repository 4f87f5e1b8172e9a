// The RocksQueueStore methods that change state. Each builds one WriteBatch.

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "storage/index_keys.h"
#include "storage/rocks_queue_store_internal.h"
#include "storage/store_steps.h"

namespace egress::storage {

Result<std::string> RocksQueueStore::FindIdempotent(std::string_view tenant, std::string_view key) {
  std::string id;
  rocksdb::Status rs =
      db_->Get(rocksdb::ReadOptions(), cf(Family::kIdem), IdemKey(tenant, key), &id);
  if (rs.IsNotFound()) {
    return std::string();
  }
  if (!rs.ok()) {
    return FromRocks(rs, "read idempotency index");
  }
  return id;
}

Result<EnqueueResult> RocksQueueStore::Enqueue(const NewDelivery& in, int64_t now_ms) {
  Result<std::vector<Result<EnqueueResult>>> batch = EnqueueBatch({in}, now_ms);
  if (!batch) {
    return batch.error();
  }
  return std::move(batch->front());
}

Result<std::vector<Result<EnqueueResult>>> RocksQueueStore::EnqueueBatch(
    const std::vector<NewDelivery>& ds, int64_t now_ms) {
  auto use = UseDb();
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  std::vector<Result<EnqueueResult>> results;
  results.reserve(ds.size());
  StripeLocks locks;
  for (const NewDelivery& in : ds) {
    if (!in.idempotency_key.empty()) {
      locks.Add(IdemStripe(in.tenant, in.idempotency_key));
    }
  }
  locks.LockAll();
  PendingWrite w;
  std::map<std::string, std::string> fresh_keys;  // idem key -> id, within this batch
  for (const NewDelivery& in : ds) {
    if (Status s = ValidateNewDelivery(in, options_); !s.ok()) {
      results.emplace_back(std::move(s));
      continue;
    }
    if (!in.idempotency_key.empty()) {
      const std::string key = IdemKey(in.tenant, in.idempotency_key);
      if (auto it = fresh_keys.find(key); it != fresh_keys.end()) {
        results.emplace_back(EnqueueResult{it->second, false});
        continue;
      }
      Result<std::string> existing = FindIdempotent(in.tenant, in.idempotency_key);
      if (!existing) {
        return existing.error();
      }
      if (!existing->empty()) {
        results.emplace_back(EnqueueResult{*existing, false});
        continue;
      }
    }
    Delivery d = NewQueuedDelivery(in, ids_.Next(now_ms), now_ms);
    Stage(w, nullptr, &d, 0);
    if (!d.idempotency_key.empty()) {
      std::string key = IdemKey(d.tenant, d.idempotency_key);
      w.Put(Family::kIdem, key, d.id);
      fresh_keys.emplace(std::move(key), d.id);
    }
    results.emplace_back(EnqueueResult{d.id, true});
  }
  if (Status s = Commit(SyncedWrite(), w, "enqueue"); !s.ok()) {
    return s;
  }
  return results;
}

Result<Delivery> RocksQueueStore::Apply(const std::string& id, const StateChange& change) {
  Result<std::vector<Result<Delivery>>> batch = ApplyBatch({{id, change}});
  if (!batch) {
    return batch.error();
  }
  return std::move(batch->front());
}

Result<std::vector<Result<Delivery>>> RocksQueueStore::ApplyBatch(
    const std::vector<IdChange>& changes) {
  auto use = UseDb();
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  StripeLocks locks;
  for (const auto& [id, change] : changes) {
    locks.Add(IdStripe(id));
  }
  locks.LockAll();
  std::vector<Result<Delivery>> results;
  results.reserve(changes.size());
  // The newest version of each id in the batch. A lease (to in_flight) is kept in memory only:
  // the disk keeps saying what it said before (the lease's disk_*), and the next change of the
  // id writes the move from there, so a lease and its outcome cost one write.
  struct Tracked {
    // v.delivery: the newest version; v.disk_bytes: the size of the record on disk once this
    // batch is written; the other disk_* valid while `leased`.
    Lease v;
    bool leased = false;      // v.delivery is a lease, not on disk
    bool was_leased = false;  // the id was leased before this batch
  };
  std::map<std::string_view, Tracked> changed;
  PendingWrite w;
  for (const auto& [id, change] : changes) {
    auto it = changed.find(id);
    if (it == changed.end()) {
      Tracked t;
      if (std::optional<Lease> lease = leases_.Find(id)) {
        t.v = std::move(*lease);
        t.leased = t.was_leased = true;
      } else if (Result<Delivery> d = Read(id, &t.v.disk_bytes); d) {
        t.v.delivery = std::move(*d);
      } else {
        results.push_back(std::move(d));
        continue;
      }
      it = changed.emplace(id, std::move(t)).first;
    }
    Tracked& t = it->second;
    Delivery& current = t.v.delivery;
    Delivery after = current;
    if (Status s = ApplyChange(change, options_.history_limit, after); !s.ok()) {
      results.emplace_back(std::move(s));
      continue;
    }
    if (after.state == DeliveryState::kInFlight) {
      // in_flight is only entered from a waiting state, which is what the disk says.
      StageInMemory(w, current, after);
      t.leased = true;
      t.v.disk_state = current.state;
      t.v.disk_next_attempt_ms = current.next_attempt_ms;
    } else if (t.leased) {
      const Delivery disk = t.v.DiskVersion();
      StageInMemory(w, current, disk);
      t.v.disk_bytes = Stage(w, &disk, &after, t.v.disk_bytes);
      t.leased = false;
    } else {
      t.v.disk_bytes = Stage(w, &current, &after, t.v.disk_bytes);
    }
    current = std::move(after);
    results.emplace_back(current);
  }
  for (auto& [id, t] : changed) {
    if (t.leased) {
      w.leases.emplace_back(std::string(id), std::move(t.v));
    } else if (t.was_leased) {
      w.leases.emplace_back(std::string(id), std::nullopt);
    }
  }
  const std::string what = changes.size() == 1
                               ? fmt::format("update delivery {}", changes[0].first)
                               : fmt::format("update {} deliveries", changes.size());
  if (Status s = Commit(SyncedWrite(), w, what); !s.ok()) {
    return s;
  }
  return results;
}

Result<std::vector<Delivery>> RocksQueueStore::LeaseDue(int64_t now_ms, size_t max) {
  auto use = UseDb();
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  std::lock_guard<std::mutex> lease(lease_mu_);
  // Candidates: up to `max` deferred ones due by now (the due index, in due order) and up to
  // `max` queued ones (the state index, in id order; a queued delivery is due when queued).
  // Leased ones keep their index entries on disk and are skipped.
  std::vector<std::string> ids;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kDue)));
    for (it->SeekToFirst(); it->Valid() && ids.size() < max; it->Next()) {
      int64_t due_ms = 0;
      std::string_view id;
      if (!ParseDueKey({it->key().data(), it->key().size()}, due_ms, id) || due_ms > now_ms) {
        break;
      }
      if (!leases_.Contains(id)) {
        ids.emplace_back(id);
      }
    }
    if (Status s = FromRocks(it->status(), "scan due index"); !s.ok()) {
      return s;
    }
  }
  {
    const std::string prefix = StateKey(DeliveryState::kQueued, "");
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kState)));
    size_t queued = 0;
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix) && queued < max;
         it->Next()) {
      std::string_view id(it->key().data() + prefix.size(), it->key().size() - prefix.size());
      if (!leases_.Contains(id)) {
        ids.emplace_back(id);
        ++queued;
      }
    }
    if (Status s = FromRocks(it->status(), "scan queued deliveries"); !s.ok()) {
      return s;
    }
  }
  StripeLocks locks;
  for (const std::string& id : ids) {
    locks.Add(IdStripe(id));
  }
  locks.LockAll();
  struct Due {
    Delivery d;
    uint64_t disk_bytes = 0;  // StoredRecordBytes of the record read
  };
  std::vector<Due> due;
  for (const std::string& id : ids) {
    if (leases_.Contains(id)) {
      continue;  // leased since the scan
    }
    uint64_t bytes = 0;
    Result<Delivery> d = Read(id, &bytes);
    if (!d) {
      return d.error();
    }
    if (IsWaiting(d->state) && d->next_attempt_ms <= now_ms) {  // else changed since the scan
      due.push_back({std::move(*d), bytes});
    }
  }
  // Earliest due first; a queued and a deferred delivery due at the same time go in id order.
  std::sort(due.begin(), due.end(), [](const Due& x, const Due& y) {
    const Delivery& a = x.d;
    const Delivery& b = y.d;
    return a.next_attempt_ms != b.next_attempt_ms ? a.next_attempt_ms < b.next_attempt_ms
                                                  : a.id < b.id;
  });
  if (due.size() > max) {
    due.resize(max);
  }
  std::vector<Delivery> leased;
  PendingWrite w;
  const StateChange change{.to = DeliveryState::kInFlight, .at_ms = now_ms};
  for (auto& [d, disk_bytes] : due) {
    Delivery before = d;
    if (Status s = ApplyChange(change, options_.history_limit, d); !s.ok()) {
      return s;
    }
    StageInMemory(w, before, d);
    w.leases.emplace_back(d.id, Lease{d, before.state, before.next_attempt_ms, disk_bytes});
    leased.push_back(std::move(d));
  }
  if (Status s = Commit(SyncedWrite(), w, "lease due deliveries"); !s.ok()) {
    return s;
  }
  return leased;
}

}  // namespace egress::storage
