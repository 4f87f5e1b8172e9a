#include "storage/quota_table.h"

#include <memory>

#include <rocksdb/db.h>

#include "storage/index_keys.h"
#include "storage/rocks_schema.h"

namespace egress::storage {

Status QuotaTable::Load(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* meta) {
  std::map<std::string, pacing::SlidingWindowCounter, std::less<>> loaded;
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), meta));
  const rocksdb::Slice p(kQuotaSlicePrefix.data(), kQuotaSlicePrefix.size());
  for (it->Seek(p); it->Valid() && it->key().starts_with(p); it->Next()) {
    std::string_view id;
    int64_t expires_ms = 0;
    if (!ParseQuotaSliceKey({it->key().data(), it->key().size()}, id, expires_ms)) {
      continue;
    }
    const int64_t n = DecodeCounter({it->value().data(), it->value().size()});
    if (n != 0) {
      loaded[std::string(id)].Add(expires_ms, n);
    }
  }
  if (Status s = FromRocks(it->status(), "load quota slices"); !s.ok()) {
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  quotas_ = std::move(loaded);
  return Status::Ok();
}

void QuotaTable::Reset(const CounterMap& slices) {
  std::map<std::string, pacing::SlidingWindowCounter, std::less<>> loaded;
  for (const auto& [key, n] : slices) {
    std::string_view id;
    int64_t expires_ms = 0;
    if (n != 0 && ParseQuotaSliceKey(key, id, expires_ms)) {
      loaded[std::string(id)].Add(expires_ms, n);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  quotas_ = std::move(loaded);
}

void QuotaTable::Apply(const CounterDeltas& deltas) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, delta] : deltas.deltas()) {
    std::string_view id;
    int64_t expires_ms = 0;
    if (delta == 0 || !ParseQuotaSliceKey(key, id, expires_ms)) {
      continue;
    }
    auto it = quotas_.find(id);
    if (it == quotas_.end()) {
      it = quotas_.emplace(std::string(id), pacing::SlidingWindowCounter()).first;
    }
    it->second.Add(expires_ms, delta);
    if (it->second.empty()) {
      quotas_.erase(it);
    }
  }
}

pacing::SlidingWindowCounter QuotaTable::Get(std::string_view tenant, std::string_view quota,
                                             int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = quotas_.find(QuotaId(tenant, quota));
  if (it == quotas_.end()) {
    return {};
  }
  it->second.Prune(now_ms);
  if (it->second.empty()) {
    quotas_.erase(it);
    return {};
  }
  return it->second;
}

}  // namespace egress::storage
