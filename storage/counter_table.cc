#include "storage/counter_table.h"

#include <array>
#include <memory>

#include "storage/index_keys.h"
#include "storage/rocks_schema.h"

namespace egress::storage {

Status CounterTable::Load(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* meta) {
  constexpr std::array<std::string_view, 4> kPrefixes = {"backlog/", "count/", "destcount/",
                                                         kStoredBytesPrefix};
  CounterMap loaded;
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), meta));
  for (std::string_view prefix : kPrefixes) {
    const rocksdb::Slice p(prefix.data(), prefix.size());
    for (it->Seek(p); it->Valid() && it->key().starts_with(p); it->Next()) {
      const int64_t n = DecodeCounter({it->value().data(), it->value().size()});
      if (n != 0) {
        loaded.emplace(it->key().ToString(), n);
      }
    }
  }
  if (Status s = FromRocks(it->status(), "load counters"); !s.ok()) {
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  values_ = std::move(loaded);
  return Status::Ok();
}

void CounterTable::Apply(const CounterDeltas& deltas) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, delta] : deltas.deltas()) {
    if (delta == 0) {
      continue;
    }
    auto it = values_.find(std::string_view(key));
    if (it == values_.end()) {
      it = values_.emplace(key, 0).first;
    }
    it->second += delta;
    if (it->second == 0) {
      values_.erase(it);  // memory follows the counters in use
    }
  }
}

int64_t CounterTable::Get(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(key);
  return it == values_.end() ? 0 : it->second;
}

}  // namespace egress::storage
