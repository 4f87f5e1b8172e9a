// The RocksQueueStore methods that only read.

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "dispatcher/base/redact.h"
#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/rocks_queue_store_internal.h"
#include "storage/setting_seal.h"
#include "storage/store_steps.h"

namespace egress::storage {
namespace {}  // namespace

Result<Delivery> RocksQueueStore::Get(const std::string& id) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  return ReadCurrent(id);
}

Result<std::vector<std::string>> RocksQueueStore::ListDestinations(const std::string& after_key,
                                                                   size_t limit) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::vector<std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kDest)));
  // The index orders destinations as stored (destination_seal.h); keys are answered opened.
  if (after_key.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(DestUpperBound(seal_.StoredKey(after_key)));
  }
  while (it->Valid() && out.size() < limit) {
    const std::string stored(DestOfIndexKey({it->key().data(), it->key().size()}));
    // An index entry whose sealed destination does not open (damaged bytes; a wrong key is
    // refused at open) is passed over: one bad entry must not hide every other destination.
    if (Result<std::string> key = seal_.OpenKey(stored); key) {
      out.push_back(std::move(*key));
    }
    it->Seek(DestUpperBound(stored));  // skip this destination's other deliveries
  }
  if (Status s = FromRocks(it->status(), "scan destinations"); !s.ok()) {
    return s;
  }
  return out;
}

Result<DestinationWork> RocksQueueStore::PendingFor(const std::string& destination_key,
                                                    const std::string& after_id, size_t limit) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  DestinationWork work{destination_key, {}, {}};
  const std::string stored_key = seal_.StoredKey(destination_key);
  DestinationParts parts;
  if (!SplitDestinationKey(stored_key, parts)) {
    return Status::InvalidArgument("not a destination key");
  }
  const std::string prefix = DestIndexKey(stored_key, "");
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kDest)));
  it->Seek(DestIndexKey(stored_key, after_id));
  for (; it->Valid() && it->key().starts_with(prefix) &&
         work.deliveries.size() + work.corrupt.size() < limit;
       it->Next()) {
    std::string_view id = IdOfDestIndexKey({it->key().data(), it->key().size()});
    if (id <= after_id) {
      continue;
    }
    if (std::optional<Delivery> leased = leases_.FindDelivery(id)) {
      work.deliveries.push_back(std::move(*leased));
      continue;
    }
    Result<std::string> bytes = ReadBytes(id);
    if (!bytes && bytes.error().code() == Status::Code::kNotFound) {
      work.corrupt.push_back({std::string(id), "no record behind its index entry"});
      continue;
    }
    if (!bytes) {
      return bytes.error();  // the disk, not the record: the whole read fails
    }
    Result<Delivery> d = DecodeUnderDestination(*bytes, id, parts, seal_);
    if (!d) {
      work.corrupt.push_back({std::string(id), d.error().message()});
      continue;
    }
    work.deliveries.push_back(std::move(*d));
  }
  if (Status s = FromRocks(it->status(), "scan destination work"); !s.ok()) {
    return s;
  }
  return work;
}

Result<ListPage> RocksQueueStore::List(const ListFilter& filter) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  ListPage page;
  if (filter.since_ms && filter.until_ms && *filter.since_ms >= *filter.until_ms) {
    return page;
  }
  if (filter.state == DeliveryState::kInFlight && !read_only_) {
    return ListLeased(leases_, filter);
  }
  // With a state, walk that state's index; otherwise every record in id order. An id is never
  // older than its delivery's created_ms (delivery_id.h), so a since bound seeks past every id
  // minted before it; until has no such guarantee and is checked record by record.
  const bool by_state = filter.state.has_value();
  const std::string prefix = by_state ? StateKey(*filter.state, "") : std::string();
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(by_state ? Family::kState : Family::kJobs)));
  std::string start = filter.after_id;
  if (filter.since_ms) {
    start = std::max(start, DeliveryIdFloor(*filter.since_ms));
  }
  it->Seek(prefix + start);
  size_t scanned = 0;
  std::string last_id;
  for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string id = it->key().ToString().substr(prefix.size());
    if (id <= filter.after_id) {
      continue;
    }
    if (page.deliveries.size() == filter.limit || scanned == kMaxListScan) {
      page.next_cursor = last_id;
      break;
    }
    ++scanned;
    // A leased delivery is in_flight, whatever its disk record and index entries say.
    std::optional<Delivery> leased = leases_.FindDelivery(id);
    Result<Delivery> d = leased     ? std::move(*leased)
                         : by_state ? Read(id)
                                    : Decode(it->value().ToStringView());
    if (!d && by_state && d.error().code() == Status::Code::kNotFound) {
      last_id = id;  // purged by retention since the index entry was read
      continue;
    }
    if (!d) {
      return d.error();
    }
    last_id = id;
    if (MatchesListFilter(filter, *d)) {
      page.deliveries.push_back(std::move(*d));
    }
  }
  if (Status s = FromRocks(it->status(), "list deliveries"); !s.ok()) {
    return s;
  }
  return page;
}

Result<StateCounts> RocksQueueStore::Counts() {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  StateCounts counts{};
  for (DeliveryState state : kAllStates) {
    const int64_t n = counters_.Get(CountKey(state));
    if (n < 0) {
      return Status::Corruption(fmt::format("counter of {} is negative ({})", StateName(state), n));
    }
    counts[static_cast<size_t>(state) - 1] = static_cast<uint64_t>(n);
  }
  return counts;
}

Result<uint64_t> RocksQueueStore::TenantBacklog(const std::string& tenant) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  const int64_t n = counters_.Get(BacklogKey(tenant));
  return n < 0 ? uint64_t{0} : static_cast<uint64_t>(n);
}

Result<std::vector<StateCounts>> RocksQueueStore::DestinationCounts(
    const std::vector<std::string>& destination_keys) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::vector<StateCounts> out(destination_keys.size(), StateCounts{});
  for (size_t i = 0; i < destination_keys.size(); ++i) {
    const std::string stored = seal_.StoredKey(destination_keys[i]);
    for (DeliveryState state :
         {DeliveryState::kQueued, DeliveryState::kInFlight, DeliveryState::kDeferred}) {
      const int64_t n = counters_.Get(DestCountKey(stored, state));
      out[i][static_cast<size_t>(state) - 1] = n < 0 ? 0 : static_cast<uint64_t>(n);
    }
  }
  return out;
}

Result<std::vector<GroupCounts>> RocksQueueStore::BacklogByTenantPlatform() {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  return counters_.Groups();
}

Result<std::vector<GroupCounts>> RocksQueueStore::TenantBacklogByPlatform(
    const std::string& tenant) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  return counters_.GroupsOf(tenant);
}

Result<StateCounts> RocksQueueStore::ScanCounts() {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  StateCounts counts{};
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kJobs)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    Result<Delivery> d = DecodeDelivery(it->value().ToStringView());
    if (!d) {
      return Status::Corruption(
          fmt::format("delivery {}: {}", it->key().ToString(), d.error().message()));
    }
    // A lease is in memory only: the record on disk still says queued or deferred.
    const bool leased = leases_.Contains(it->key().ToStringView());
    ++counts[static_cast<size_t>(leased ? DeliveryState::kInFlight : d->state) - 1];
  }
  if (Status s = FromRocks(it->status(), "scan deliveries"); !s.ok()) {
    return s;
  }
  return counts;
}

namespace {

bool SealedKey(const StoreOptions& options, std::string_view key) {
  for (const std::string& prefix : options.sealed_setting_prefixes) {
    if (key.starts_with(prefix)) {
      return true;
    }
  }
  return false;
}

}  // namespace

pacing::SlidingWindowCounter RocksQueueStore::QuotaUsage(const std::string& tenant,
                                                         const std::string& quota, int64_t now_ms) {
  return quotas_.Get(tenant, quota, now_ms);
}

Status RocksQueueStore::PutSetting(const std::string& key, const std::string& value) {
  auto use = UseDb();
  if (Status s = CheckWritable(); !s.ok()) {
    return s;
  }
  const std::string full = "setting/" + key;
  std::string stored = value;
  if (!value.empty() && options_.secrets_key && SealedKey(options_, key)) {
    Result<std::string> sealed = SealSetting(*options_.secrets_key, key, value);
    if (!sealed) {
      return sealed.error();
    }
    stored = std::move(*sealed);
  }
  Status written =
      FromRocks(value.empty() ? db_->Delete(SyncedWrite(), cf(Family::kMeta), full)
                              : db_->Put(SyncedWrite(), cf(Family::kMeta), full, stored),
                "write setting " + RedactText(key));
  if (written.ok()) {
    // After the write: a reader that sees the new version lists the new setting.
    ++settings_version_;
  }
  return written;
}

Result<uint64_t> RocksQueueStore::SettingsVersion() {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  return settings_version_.load();
}

Status RocksQueueStore::SealSettings() {
  if (!options_.secrets_key || read_only_) {
    return Status::Ok();
  }
  // The plaintext ones first, read raw: ListSettings would refuse nothing for them.
  std::vector<std::pair<std::string, std::string>> plaintext;
  {
    auto use = UseDb();
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kMeta)));
    for (const std::string& prefix : options_.sealed_setting_prefixes) {
      const std::string full = "setting/" + prefix;
      for (it->Seek(full); it->Valid() && it->key().starts_with(full); it->Next()) {
        if (!IsSealed(it->value().ToStringView())) {
          plaintext.emplace_back(it->key().ToString().substr(8), it->value().ToString());
        }
      }
    }
    if (Status s = FromRocks(it->status(), "list settings"); !s.ok()) {
      return s;
    }
  }
  // Every sealed one must open with this key: a wrong key stops the start, naming the setting.
  for (const std::string& prefix : options_.sealed_setting_prefixes) {
    if (auto opened = ListSettings(prefix); !opened) {
      return opened.error();
    }
  }
  for (const auto& [key, value] : plaintext) {
    if (Status s = PutSetting(key, value); !s.ok()) {
      return s;
    }
  }
  if (plaintext.empty()) {
    return Status::Ok();
  }
  // The plaintext versions stay in the WAL and the older tables until every family is flushed
  // (a WAL file goes when no family needs it) and the settings' family compacted.
  auto use = UseDb();
  std::vector<rocksdb::ColumnFamilyHandle*> all;
  for (size_t i = 0; i < kFamilies.size(); ++i) {
    all.push_back(cf(static_cast<Family>(i)));
  }
  if (Status s = FromRocks(db_->Flush(rocksdb::FlushOptions(), all), "flush settings"); !s.ok()) {
    return s;
  }
  return FromRocks(
      db_->CompactRange(rocksdb::CompactRangeOptions(), cf(Family::kMeta), nullptr, nullptr),
      "compact settings");
}

Result<std::vector<std::pair<std::string, std::string>>> RocksQueueStore::ListSettings(
    const std::string& prefix) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  const std::string full = "setting/" + prefix;
  std::vector<std::pair<std::string, std::string>> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kMeta)));
  for (it->Seek(full); it->Valid() && it->key().starts_with(full); it->Next()) {
    std::string key = it->key().ToString().substr(8);
    std::string value = it->value().ToString();
    if (IsSealed(value)) {
      if (!options_.secrets_key) {
        return Status::FailedPrecondition("setting " + RedactText(key) +
                                          " is sealed and no secrets key is configured");
      }
      Result<std::string> opened = OpenSetting(*options_.secrets_key, key, value);
      if (!opened) {
        return opened.error();
      }
      value = std::move(*opened);
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  if (Status s = FromRocks(it->status(), "list settings"); !s.ok()) {
    return s;
  }
  return out;
}

}  // namespace egress::storage
