#pragma once

#include <memory>
#include <string>
#include <vector>

#include <rocksdb/db.h>

#include "storage/rocks_schema.h"

namespace egress::storage {

// The store's RocksDB opened directly, with every column family, for tests that put back by
// hand what an older build wrote or damage a record on purpose. The store must be closed
// meanwhile (the LOCK). Failures are test failures (gtest), not errors.
class RawStore {
 public:
  explicit RawStore(const std::string& path);
  ~RawStore();
  RawStore(const RawStore&) = delete;
  RawStore& operator=(const RawStore&) = delete;

  void Put(Family f, const std::string& key, const std::string& value);
  void Delete(Family f, const std::string& key);
  // The value of `key`, empty when absent.
  std::string Get(Family f, const std::string& key);
  std::vector<std::string> Keys(Family f);

 private:
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace egress::storage
