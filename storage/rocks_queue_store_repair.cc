// The RocksQueueStore methods that get the store past faults: Health and Recover (RocksDB's
// Resume, or a reopen) after a write or background fault, MoveCorruptToDead for a record that
// cannot be read. docs/storage.md, "Faults".

#include <fmt/format.h>

#include "storage/delivery_codec.h"
#include "storage/delivery_id.h"
#include "storage/index_keys.h"
#include "storage/rocks_queue_store_internal.h"
#include "storage/store_steps.h"

namespace egress::storage {

StoreHealth RocksQueueStore::Health() {
  return hooks_.health ? hooks_.health->Get() : StoreHealth{};
}

bool RocksQueueStore::ActiveMemtablesEmpty() const {
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    uint64_t entries = 0;
    if (!db_->GetIntProperty(h, "rocksdb.num-entries-active-mem-table", &entries) || entries != 0) {
      return false;
    }
  }
  return true;
}

Status RocksQueueStore::Recover() {
  if (!hooks_.health || hooks_.health->healthy()) {
    return Status::Ok();
  }
  const uint64_t since = hooks_.health->generation();
  {
    auto use = UseDb();
    if (closed_) {
      return Status::FailedPrecondition("store is closed");
    }
    // Resume flushes every memtable (so it needs the space for them) and switches to a new
    // write-ahead log when it flushes one; with nothing to flush it keeps the log a failed write
    // left broken, which only a reopen replaces.
    if (db_ != nullptr && !ActiveMemtablesEmpty()) {
      if (Status s = FromRocks(db_->Resume(), "resume"); !s.ok()) {
        return s;
      }
      return ClearedOrNewFault(since);
    }
  }
  return Reopen(since);
}

Status RocksQueueStore::Reopen(uint64_t since) {
  std::unique_lock<std::shared_mutex> lock(db_mu_);
  if (closed_) {
    return Status::FailedPrecondition("store is closed");
  }
  if (db_ != nullptr) {
    // The database is being thrown away: what its close reports is the fault being recovered.
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    }
    handles_.clear();
    db_->Close().PermitUncheckedError();
    db_.reset();
  }
  auto opened = OpenRocksDb(options_.path, false, false, hooks_);
  if (!opened) {
    return opened.error();  // OpenRocksDb told the listener; the next Recover tries again
  }
  db_ = std::move(opened->db);
  handles_ = std::move(opened->handles);
  if (Status s = LoadCounters(); !s.ok()) {
    hooks_.health->Fail("error", "reopen", s.ToString());
    return s;
  }
  // A write reported failed may still have reached the log the reopen replayed: what this store
  // remembers of the disk is checked against it.
  records_.Clear();
  std::vector<std::string> leased;
  leases_.Visit("", [&](const Delivery& d) {
    leased.push_back(d.id);
    return true;
  });
  PendingWrite moves;
  // Each lease kept (with the size of its record read again) or dropped.
  std::vector<std::pair<std::string, std::optional<Lease>>> changed;
  for (const std::string& id : leased) {
    std::optional<Lease> lease = leases_.Find(id);
    std::string bytes;
    Result<Delivery> disk = Status::NotFound("");
    if (db_->Get(rocksdb::ReadOptions(), cf(Family::kJobs), id, &bytes).ok()) {
      disk = DecodeDelivery(bytes);
    }
    if (lease && disk && disk->state == lease->disk_state &&
        disk->next_attempt_ms == lease->disk_next_attempt_ms) {
      StageInMemory(moves, lease->DiskVersion(), lease->delivery);
      lease->disk_bytes = StoredRecordBytes(id, bytes);
      changed.emplace_back(id, std::move(lease));
    } else {
      // Changed under the lease (its outcome landed after all) or unreadable: the attempt's
      // outcome write now fails its compare-and-set, and the disk's version stands.
      changed.emplace_back(id, std::nullopt);
    }
  }
  counters_.Apply(moves.memory_only);
  leases_.Update(std::move(changed));
  return ClearedOrNewFault(since);
}

Status RocksQueueStore::ClearedOrNewFault(uint64_t since) {
  hooks_.health->Clear(since);
  const StoreHealth h = hooks_.health->Get();
  if (h.healthy) {
    return Status::Ok();
  }
  // An error reported after `since` (a background job of the failed database finishing late, or
  // a new fault): it is not the one recovered from, so the store stays unhealthy and the next
  // Recover deals with it.
  return Status::Unavailable(
      fmt::format("a new store fault arrived while recovering ({} during {})", h.reason, h.during));
}

Result<Delivery> RocksQueueStore::MoveCorruptToDead(const std::string& id,
                                                    const std::string& destination_key,
                                                    int64_t now_ms) {
  auto use = UseDb();
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  DestinationParts parts;  // as given (opened)
  DestinationParts stored_parts;
  const std::string stored_key = seal_.StoredKey(destination_key);
  if (!SplitDestinationKey(destination_key, parts) ||
      !SplitDestinationKey(stored_key, stored_parts)) {
    return Status::InvalidArgument("not a destination key");
  }
  std::lock_guard<std::mutex> stripe(IdStripe(id));
  if (leases_.Contains(id)) {
    return Status::FailedPrecondition(fmt::format("delivery {} is in flight", id));
  }
  auto exists = [&](Family f, const std::string& key) -> Result<bool> {
    std::string value;
    rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), cf(f), key, &value);
    if (rs.IsNotFound()) {
      return false;
    }
    if (!rs.ok()) {
      return FromRocks(rs, fmt::format("read index of delivery {}", id));
    }
    return true;
  };
  Result<bool> indexed = exists(Family::kDest, DestIndexKey(stored_key, id));
  if (!indexed) {
    return indexed.error();
  }
  if (!*indexed) {
    return Status::NotFound(fmt::format("destination holds no delivery {}", id));
  }
  // What is wrong with it (read from the disk: the record cache holds only what decoded).
  std::string bytes;
  std::string problem;
  rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), cf(Family::kJobs), id, &bytes);
  // Counted as found: a record damaged at rest was counted at the size it was written with, so
  // its tenant's stored bytes then differ from a scan by the damage (docs/storage.md).
  const uint64_t found_bytes = rs.ok() ? StoredRecordBytes(id, bytes) : 0;
  if (rs.IsNotFound()) {
    problem = "no record behind its index entry";
  } else if (!rs.ok()) {
    return FromRocks(rs, fmt::format("read delivery {}", id));
  } else if (Result<Delivery> d = DecodeUnderDestination(bytes, id, stored_parts, seal_); !d) {
    problem = d.error().message();
  } else {
    return Status::FailedPrecondition(
        fmt::format("delivery {} reads as a delivery of its destination; nothing to repair", id));
  }
  // Its state as the state index has it (the record cannot say); extra entries are dropped.
  PendingWrite w;
  std::optional<DeliveryState> state;
  for (DeliveryState s : kAllStates) {
    Result<bool> found = exists(Family::kState, StateKey(s, id));
    if (!found) {
      return found.error();
    }
    if (*found && !state) {
      state = s;
    } else if (*found) {
      w.Delete(Family::kState, StateKey(s, id));
    }
  }
  Delivery before{.id = id,
                  .tenant = parts.tenant,
                  .platform = parts.platform,
                  .destination = parts.destination,
                  .credential = parts.credential};
  if (state == DeliveryState::kDeferred) {
    // The due index is keyed by time first: find the entry of this id.
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kDue)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      int64_t due_ms = 0;
      std::string_view due_id;
      if (ParseDueKey({it->key().data(), it->key().size()}, due_ms, due_id) && due_id == id) {
        before.next_attempt_ms = due_ms;
        break;
      }
    }
    if (Status s = FromRocks(it->status(), "scan due index"); !s.ok()) {
      return s;
    }
  }
  Delivery after = before;
  after.payload = std::move(bytes);
  const int64_t minted_ms = DeliveryIdMillis(id);
  after.created_ms = minted_ms >= 0 ? minted_ms : now_ms;
  after.state = DeliveryState::kDead;
  after.reason = "corrupt_record: " + problem;
  after.updated_ms = now_ms;
  after.finished_ms = now_ms;
  after.next_attempt_ms = 0;
  w.Delete(Family::kDest, DestIndexKey(stored_key, id));
  if (state) {
    before.state = *state;
    Stage(w, &before, &after, found_bytes);
  } else {
    Stage(w, nullptr, &after, found_bytes);  // no state entry: it was counted nowhere we can tell
  }
  if (Status s = Commit(SyncedWrite(), w, fmt::format("move corrupt delivery {} to dead", id));
      !s.ok()) {
    return s;
  }
  return after;
}

}  // namespace egress::storage
