#include "tests/support/raw_store.h"

#include <gtest/gtest.h>

namespace egress::storage {

RawStore::RawStore(const std::string& path) {
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const FamilySpec& spec : kFamilies) {
    rocksdb::ColumnFamilyOptions cf;
    if (spec.family == Family::kMeta) {
      cf.merge_operator = NewCounterMergeOperator();  // or the WAL's counter merges fail
    }
    families.emplace_back(spec.name, cf);
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(), path, families, &handles_, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  db_.reset(raw);
}

RawStore::~RawStore() {
  if (db_ == nullptr) {
    return;
  }
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
}

void RawStore::Put(Family f, const std::string& key, const std::string& value) {
  ASSERT_NE(db_, nullptr);
  rocksdb::Status s =
      db_->Put(rocksdb::WriteOptions(), handles_[static_cast<size_t>(f)], key, value);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

void RawStore::Delete(Family f, const std::string& key) {
  ASSERT_NE(db_, nullptr);
  rocksdb::Status s = db_->Delete(rocksdb::WriteOptions(), handles_[static_cast<size_t>(f)], key);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

std::string RawStore::Get(Family f, const std::string& key) {
  std::string value;
  if (db_ != nullptr) {
    db_->Get(rocksdb::ReadOptions(), handles_[static_cast<size_t>(f)], key, &value)
        .PermitUncheckedError();
  }
  return value;
}

std::vector<std::string> RawStore::Keys(Family f) {
  std::vector<std::string> keys;
  if (db_ == nullptr) {
    return keys;
  }
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), handles_[static_cast<size_t>(f)]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    keys.push_back(it->key().ToString());
  }
  return keys;
}

}  // namespace egress::storage
