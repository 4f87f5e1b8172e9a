// The RocksQueueStore's per-tenant stored bytes (docs/storage.md, "Stored bytes"): the counter's
// reads, the scan that checks it, and the migration that writes it for a store of format 4.

#include <fmt/format.h>

#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/rocks_queue_store_internal.h"

namespace egress::storage {

Result<uint64_t> RocksQueueStore::TenantStoredBytes(const std::string& tenant) {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  if (!counts_stored_bytes_) {
    return Status::FailedPrecondition(
        "the store's format predates per-tenant stored bytes; a writable open counts them");
  }
  // Below 0 only after a record that did not decode was repaired (MigrateFromFormat4).
  const int64_t n = counters_.Get(StoredBytesKey(tenant));
  return n < 0 ? uint64_t{0} : static_cast<uint64_t>(n);
}

Result<std::map<std::string, uint64_t>> RocksQueueStore::SumStoredBytes(size_t& undecodable) {
  std::map<std::string, uint64_t> bytes;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kJobs)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    Result<Delivery> d = DecodeDelivery(it->value().ToStringView());
    if (!d) {
      ++undecodable;
      continue;
    }
    bytes[d->tenant] += StoredRecordBytes(it->key().ToStringView(), it->value().ToStringView());
  }
  if (Status s = FromRocks(it->status(), "scan deliveries"); !s.ok()) {
    return s;
  }
  return bytes;
}

Result<std::map<std::string, uint64_t>> RocksQueueStore::ScanStoredBytes() {
  auto use = UseDb();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  size_t undecodable = 0;
  Result<std::map<std::string, uint64_t>> bytes = SumStoredBytes(undecodable);
  if (bytes && undecodable > 0) {
    return Status::Corruption(fmt::format("{} delivery records do not decode", undecodable));
  }
  return bytes;
}

Status RocksQueueStore::MigrateFromFormat4() {
  // Every record is read once; the counters and the marker go in one batch, so a crash midway
  // leaves format 4 and the next open counts again. A record that does not decode names no
  // tenant and is left out: MoveCorruptToDead, which later takes the bytes it finds off the
  // tenant of the record's destination, then leaves that tenant's count low by them.
  size_t undecodable = 0;
  Result<std::map<std::string, uint64_t>> bytes = SumStoredBytes(undecodable);
  if (!bytes) {
    return bytes.error();
  }
  rocksdb::WriteBatch batch;
  for (const auto& [tenant, n] : *bytes) {
    batch.Put(cf(Family::kMeta), StoredBytesKey(tenant),
              EncodeCounterDelta(static_cast<int64_t>(n)));
  }
  batch.Put(cf(Family::kMeta), std::string(kFormatKey), std::string(kFormatValue));
  return FromRocks(WriteBatchToRocks(*db_, SyncedWrite(), batch),
                   "migrate store from format 4 to 5");
}

}  // namespace egress::storage
