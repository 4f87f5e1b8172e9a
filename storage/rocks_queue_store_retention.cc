// The RocksQueueStore's retention: the purge of expired records and idempotency keys, the
// removal of one record, and the migration that builds the format-4 retention index.

#include <set>

#include <fmt/format.h>

#include "storage/index_keys.h"
#include "storage/rocks_queue_store_internal.h"
#include "storage/store_steps.h"

namespace egress::storage {
namespace {

// How often (in purge time) the cursors are dropped, so a scan starts from the front again.
constexpr int64_t kRescanEveryMs = 3'600'000;

}  // namespace

Status RocksQueueStore::ScanExpired(char tag, int64_t cutoff_ms, size_t limit,
                                    const std::set<std::string_view>& skip,
                                    std::vector<std::string>& keys, bool& more) {
  // Bounded above by the cutoff, so the scan never steps over entries that are not due.
  const std::string upper = DoneBound(tag, cutoff_ms);
  const rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions read;
  read.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read, cf(Family::kDone)));
  const std::string& cursor = purge_cursors_[tag];
  it->Seek(cursor.empty() ? std::string(1, tag) : cursor);
  for (; it->Valid(); it->Next()) {
    char key_tag = 0;
    int64_t finished_ms = 0;
    std::string_view id;
    if (!skip.empty() && ParseDoneKey(it->key().ToStringView(), key_tag, finished_ms, id) &&
        skip.contains(id)) {
      continue;
    }
    if (keys.size() == limit) {
      more = true;
      break;
    }
    keys.push_back(it->key().ToString());
  }
  return FromRocks(it->status(), "scan retention index");
}

Status RocksQueueStore::StageReleaseIdem(PendingWrite& w, const Delivery& d) {
  if (d.idempotency_key.empty()) {
    return Status::Ok();
  }
  Result<std::string> holder = FindIdempotent(d.tenant, d.idempotency_key);
  if (!holder) {
    return holder.error();
  }
  if (*holder == d.id) {
    w.Delete(Family::kIdem, IdemKey(d.tenant, d.idempotency_key));
  }
  return Status::Ok();
}

Result<PurgeCounts> RocksQueueStore::PurgeExpired(const RetentionPolicy& policy, int64_t now_ms,
                                                  size_t max) {
  auto use = UseDb();
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  if (max == 0) {
    return Status::InvalidArgument("purge: max must be at least 1");
  }
  std::lock_guard<std::mutex> purge(purge_mu_);
  if (now_ms < cursors_since_ms_ || now_ms - cursors_since_ms_ >= kRescanEveryMs) {
    purge_cursors_.clear();
    cursors_since_ms_ = now_ms;
  }
  PurgeCounts counts;
  // 1. Collect the expired entries of each class, oldest first, up to `max` in all, and read
  // their records without any lock (they are finished: only a replay of a dead one or another
  // purge can change them, which the check under the lock below catches).
  struct Expired {
    DeliveryState state;
    std::string key;  // the retention entry
    Delivery record;
    uint64_t bytes = 0;  // the record's StoredRecordBytes
  };
  std::vector<Expired> records;
  // The cursors once the write succeeded: the last key scanned of each class.
  std::map<char, std::string> next_cursors;
  std::vector<std::string> keys;
  size_t examined = 0;  // entries scanned, whether or not they still hold
  for (DeliveryState state : kRetainedClasses) {
    const int64_t age = RetentionAgeOf(policy, state);
    if (age <= 0) {
      continue;
    }
    keys.clear();
    const char tag = static_cast<char>(state);
    bool more = false;
    if (Status s = ScanExpired(tag, now_ms - age, max - examined, {}, keys, more); !s.ok()) {
      return s;
    }
    examined += keys.size();
    counts.more = counts.more || more;
    if (!keys.empty()) {
      next_cursors[tag] = keys.back();
    }
    for (std::string& key : keys) {
      char key_tag = 0;
      int64_t finished_ms = 0;
      std::string_view id;
      if (!ParseDoneKey(key, key_tag, finished_ms, id)) {
        continue;
      }
      uint64_t bytes = 0;
      Result<Delivery> d = Read(id, &bytes);
      if (!d && d.error().code() == Status::Code::kNotFound) {
        continue;  // purged since the scan
      }
      if (!d) {
        return d.error();
      }
      if (d->state == state && d->finished_ms == finished_ms) {
        // Removal needs the record's keys, not its payload or history: drop them, so a slice
        // holds `max` small records whatever the payload cap.
        std::string().swap(d->payload);
        std::vector<Attempt>().swap(d->history);
        records.push_back({state, std::move(key), std::move(*d), bytes});
      }
    }
  }
  std::set<std::string_view> purging;  // ids whose record goes in this write
  for (const Expired& e : records) {
    purging.insert(e.record.id);
  }
  // Idempotency keys of deliveries whose record stays (a record purged here takes its key and
  // its entry along).
  std::vector<std::string> idem_entries;
  if (policy.idempotency_ms > 0) {
    bool more = false;
    if (Status s = ScanExpired(kIdemExpiryTag, now_ms - policy.idempotency_ms, max - examined,
                               purging, idem_entries, more);
        !s.ok()) {
      return s;
    }
    counts.more = counts.more || more;
    if (!idem_entries.empty()) {
      next_cursors[kIdemExpiryTag] = idem_entries.back();
    }
  }
  // 2. Under the locks of every id involved, keep what is still as scanned: an entry of the
  // retention index exists exactly while its record is finished with that finish time.
  StripeLocks locks;
  std::vector<std::pair<std::string, std::string_view>> idem_ids;  // entry, id
  for (const Expired& e : records) {
    locks.Add(IdStripe(e.record.id));
  }
  for (const std::string& key : idem_entries) {
    char tag = 0;
    int64_t finished_ms = 0;
    std::string_view id;
    if (ParseDoneKey(key, tag, finished_ms, id)) {
      locks.Add(IdStripe(id));
      idem_ids.emplace_back(key, id);
    }
  }
  locks.LockAll();
  PendingWrite w;
  std::string value;
  auto present = [&](const std::string& key) -> Result<bool> {
    rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), cf(Family::kDone), key, &value);
    if (rs.IsNotFound()) {
      return false;
    }
    if (!rs.ok()) {
      return FromRocks(rs, "read retention index");
    }
    return true;
  };
  PurgeCounts removed;
  for (const Expired& e : records) {
    Result<bool> still = present(e.key);
    if (!still) {
      return still.error();
    }
    if (!*still) {
      continue;  // replayed or purged since the scan
    }
    if (Status s = StageReleaseIdem(w, e.record); !s.ok()) {
      return s;
    }
    Stage(w, &e.record, nullptr, e.bytes);
    ++PurgedCountOf(removed, e.state);
  }
  for (const auto& [key, id] : idem_ids) {
    Result<bool> still = present(key);
    if (!still) {
      return still.error();
    }
    if (!*still) {
      continue;
    }
    // `value` is IdemKey(tenant, key); release it only while it still names this delivery.
    std::string holder;
    rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), cf(Family::kIdem), value, &holder);
    if (rs.ok() && holder == id) {
      w.Delete(Family::kIdem, value);
      ++removed.idempotency_keys;
    } else if (!rs.ok() && !rs.IsNotFound()) {
      return FromRocks(rs, "read idempotency index");
    }
    w.Delete(Family::kDone, key);
  }
  {
    bool more = false;
    if (Status s = StagePruneQuotas(w, now_ms - kQuotaPruneGraceMs, max, more); !s.ok()) {
      return s;
    }
    counts.more = counts.more || more;
  }
  // Not synced: a purge lost in a crash is redone by the next call.
  if (Status s = Commit(rocksdb::WriteOptions(), w, "purge expired deliveries"); !s.ok()) {
    return s;
  }
  for (auto& [tag, key] : next_cursors) {
    purge_cursors_[tag] = std::move(key);
  }
  removed.more = counts.more;
  return removed;
}

Status RocksQueueStore::StagePruneQuotas(PendingWrite& w, int64_t before_ms, size_t max,
                                         bool& more) {
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kMeta)));
  const rocksdb::Slice prefix(kQuotaSlicePrefix.data(), kQuotaSlicePrefix.size());
  size_t staged = 0;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string_view id;
    int64_t expires_ms = 0;
    if (ParseQuotaSliceKey({it->key().data(), it->key().size()}, id, expires_ms) &&
        expires_ms > before_ms) {
      continue;
    }
    if (staged == max) {
      more = true;
      break;
    }
    w.Delete(Family::kMeta, it->key().ToString());
    ++staged;
  }
  return FromRocks(it->status(), "scan quota slices");
}

Status RocksQueueStore::Purge(const std::string& id) {
  auto use = UseDb();
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  std::lock_guard<std::mutex> lock(IdStripe(id));
  uint64_t bytes = 0;
  Result<Delivery> d = ReadCurrent(id, &bytes);
  if (!d) {
    return d.error();
  }
  if (!IsTerminal(d->state)) {
    return Status::FailedPrecondition(fmt::format(
        "delivery {} is {}; only finished deliveries can be purged", id, StateName(d->state)));
  }
  PendingWrite w;
  if (Status s = StageReleaseIdem(w, *d); !s.ok()) {
    return s;
  }
  Stage(w, &*d, nullptr, bytes);
  return Commit(SyncedWrite(), w, fmt::format("purge delivery {}", id));
}

Status RocksQueueStore::MigrateFromFormat3() {
  // Format 3 indexed delivered and cancelled records only, as be64(finished_ms) · id, whose first
  // byte is 0 for any time before 2^56 ms; format 4's classes start at byte 4. Each finished
  // record gets its format-4 entries, in batches (a crash midway leaves format 3, and the next
  // open writes the same entries again); then one batch drops every format-3 entry and writes
  // the marker.
  constexpr size_t kBatch = 10'000;
  for (DeliveryState state : kRetainedClasses) {
    const std::string prefix = StateKey(state, "");
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kState)));
    rocksdb::WriteBatch batch;
    size_t staged = 0;
    auto flush = [&]() -> Status {
      Status s = FromRocks(WriteBatchToRocks(*db_, SyncedWrite(), batch),
                           "migrate store from format 3 to 4");
      batch.Clear();
      staged = 0;
      return s;
    };
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const std::string_view id(it->key().data() + prefix.size(), it->key().size() - prefix.size());
      Result<Delivery> d = Read(id);
      if (!d && d.error().code() == Status::Code::kNotFound) {
        continue;
      }
      if (!d) {
        return d.error();
      }
      if (d->state != state) {
        continue;
      }
      for (const IndexEntry& e : IndexEntriesOf(*d, DestinationKeyOf(*d))) {
        if (e.family == Family::kDone) {
          batch.Put(cf(Family::kDone), e.key, e.value);
        }
      }
      if (++staged == kBatch) {
        if (Status s = flush(); !s.ok()) {
          return s;
        }
      }
    }
    if (Status s = FromRocks(it->status(), "scan finished deliveries (format 3 migration)");
        !s.ok()) {
      return s;
    }
    if (staged > 0) {
      if (Status s = flush(); !s.ok()) {
        return s;
      }
    }
  }
  rocksdb::WriteBatch batch;
  batch.DeleteRange(cf(Family::kDone), std::string(1, '\x00'), std::string(1, '\x04'));
  batch.Put(cf(Family::kMeta), std::string(kFormatKey), std::string(kFormat4));
  return FromRocks(WriteBatchToRocks(*db_, SyncedWrite(), batch),
                   "migrate store from format 3 to 4");
}

}  // namespace egress::storage
