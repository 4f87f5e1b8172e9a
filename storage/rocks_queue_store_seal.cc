// Sealing at rest of the destinations that hold a secret (destination_seal.h): the pass a
// writable open makes over records written without a key.

#include <set>
#include <string>

#include <fmt/format.h>

#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/rocks_queue_store_internal.h"

namespace egress::storage {
namespace {

// The marker's value: this text sealed, so that a start with another key is refused at once.
constexpr std::string_view kMarkerText = "~sealed1:relay-egress destinations";

Status WrongKey() {
  return Status::Corruption(
      "the store's destinations were sealed with another secrets key (server.secrets_key_file "
      "or RELAY_EGRESS_SECRETS_KEY must be the key this store was written with)");
}

}  // namespace

Result<size_t> RocksQueueStore::SealDestinations() {
  if (read_only_) {
    return size_t{0};
  }
  const std::string marker(kDestinationsSealedKey);
  std::string value;
  rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), cf(Family::kMeta), marker, &value);
  if (!rs.ok() && !rs.IsNotFound()) {
    return FromRocks(rs, "read the sealed-destinations marker");
  }
  if (!seal_.has_key()) {
    // A store whose destinations are sealed cannot be read without its key: its destination
    // index, counters and records name them sealed. Refused, rather than a start that could
    // deliver none of its backlog. (Without a marker there is nothing sealed: destinations are
    // written as posted, and the next open with a key seals them.)
    if (rs.ok()) {
      return Status::FailedPrecondition(
          "the store's destinations are sealed: start with the secrets key it was written with "
          "(server.secrets_key_file or RELAY_EGRESS_SECRETS_KEY)");
    }
    return size_t{0};
  }
  if (rs.ok()) {
    Result<std::string> opened = seal_.Open(value);
    if (!opened || *opened != kMarkerText) {
      return WrongKey();
    }
    return size_t{0};
  }
  // Every record, in batches: one record's new bytes, index entry and counter moves (its stored
  // bytes grow by the seal) go in one batch, so a crash midway leaves each record either as it
  // was or sealed, and the next open goes on from there.
  constexpr size_t kBatch = 10'000;
  rocksdb::WriteBatch batch;
  size_t staged = 0;
  size_t sealed = 0;
  // The plaintext counter keys the moves bring to 0, dropped once every record is sealed.
  std::set<std::string> plain_counters;
  auto flush = [&]() -> Status {
    Status s = FromRocks(WriteBatchToRocks(*db_, SyncedWrite(), batch), "seal destinations");
    batch.Clear();
    staged = 0;
    return s;
  };
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kJobs)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    Result<Delivery> d = DecodeDelivery(it->value().ToStringView());
    if (!d) {
      continue;  // left to the repair path (PendingFor reports it, MoveCorruptToDead moves it)
    }
    if (d->destination.starts_with(kSealedDestinationPrefix)) {
      if (!seal_.Open(d->destination)) {
        return WrongKey();
      }
      continue;
    }
    if (!DestinationSeal::HoldsSecret(d->destination)) {
      continue;
    }
    const std::string stored = seal_.Stored(d->destination);
    if (!IsTerminal(d->state)) {
      const std::string plain_key = DestinationKeyOf(*d);
      const std::string stored_key =
          DestinationKeyOf(d->platform, d->tenant, d->credential, stored);
      batch.Delete(cf(Family::kDest), DestIndexKey(plain_key, d->id));
      batch.Put(cf(Family::kDest), DestIndexKey(stored_key, d->id), "");
      batch.Merge(cf(Family::kMeta), DestCountKey(plain_key, d->state), EncodeCounterDelta(-1));
      plain_counters.insert(DestCountKey(plain_key, d->state));
      batch.Merge(cf(Family::kMeta), DestCountKey(stored_key, d->state), EncodeCounterDelta(1));
    }
    const std::string record = EncodeDelivery(*d, stored);
    const int64_t grown =
        static_cast<int64_t>(record.size()) - static_cast<int64_t>(it->value().size());
    batch.Merge(cf(Family::kMeta), StoredBytesKey(d->tenant), EncodeCounterDelta(grown));
    batch.Put(cf(Family::kJobs), it->key(), record);
    ++sealed;
    if (++staged == kBatch) {
      if (Status s = flush(); !s.ok()) {
        return s;
      }
    }
  }
  if (Status s = FromRocks(it->status(), "scan records to seal destinations"); !s.ok()) {
    return s;
  }
  it.reset();
  for (const std::string& key : plain_counters) {
    batch.Delete(cf(Family::kMeta), key);
  }
  batch.Put(cf(Family::kMeta), marker, seal_.Stored(kMarkerText));
  if (Status s = flush(); !s.ok()) {
    return s;
  }
  if (sealed == 0) {
    return size_t{0};
  }
  // The plaintext versions stay in the WAL and the older tables until every family is flushed
  // and the families holding destinations are compacted.
  std::vector<rocksdb::ColumnFamilyHandle*> all;
  for (size_t i = 0; i < kFamilies.size(); ++i) {
    all.push_back(cf(static_cast<Family>(i)));
  }
  if (Status s = FromRocks(db_->Flush(rocksdb::FlushOptions(), all), "flush sealed destinations");
      !s.ok()) {
    return s;
  }
  for (Family f : {Family::kJobs, Family::kDest, Family::kMeta}) {
    if (Status s =
            FromRocks(db_->CompactRange(rocksdb::CompactRangeOptions(), cf(f), nullptr, nullptr),
                      "compact sealed destinations");
        !s.ok()) {
      return s;
    }
  }
  return sealed;
}

}  // namespace egress::storage
