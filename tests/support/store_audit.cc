#include "tests/support/store_audit.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <rocksdb/db.h>

#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/rocks_queue_store_internal.h"

namespace egress::storage {
namespace {

using Entry = std::tuple<Family, std::string, std::string>;  // family, key, value

std::string Printable(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> AuditStore(const std::string& path) {
  std::vector<std::string> problems;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const FamilySpec& spec : kFamilies) {
    rocksdb::ColumnFamilyOptions cf;
    if (spec.family == Family::kMeta) {
      cf.merge_operator = NewCounterMergeOperator();
    }
    families.emplace_back(spec.name, cf);
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), path, families, &handles, &raw);
  if (!s.ok()) {
    return {"open: " + s.ToString()};
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  auto each = [&](Family f, const std::function<void(std::string, std::string)>& fn) {
    std::unique_ptr<rocksdb::Iterator> it(
        db->NewIterator(rocksdb::ReadOptions(), handles[static_cast<size_t>(f)]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      fn(it->key().ToString(), it->value().ToString());
    }
    if (!it->status().ok()) {
      problems.push_back("scan: " + it->status().ToString());
    }
  };
  std::map<std::string, Delivery> records;
  std::map<std::string, int64_t> stored_bytes;  // by tenant
  each(Family::kJobs, [&](std::string id, std::string value) {
    Result<Delivery> d = DecodeDelivery(value);
    if (!d) {
      problems.push_back(fmt::format("record {}: {}", id, d.error().ToString()));
      return;
    }
    stored_bytes[d->tenant] += static_cast<int64_t>(StoredRecordBytes(id, value));
    records.emplace(std::move(id), std::move(*d));
  });
  std::set<Entry> expected;
  std::map<DeliveryState, int64_t> counted;
  for (const auto& [id, d] : records) {
    ++counted[d.state];
    for (IndexEntry& e : IndexEntriesOf(d, DestinationKeyOf(d))) {
      expected.emplace(e.family, std::move(e.key), std::move(e.value));
    }
  }
  std::set<Entry> found;
  for (Family f : {Family::kDue, Family::kDest, Family::kState, Family::kDone}) {
    each(f, [&](std::string key, std::string value) {
      found.emplace(f, std::move(key), std::move(value));
    });
  }
  for (const Entry& e : found) {
    if (!expected.contains(e)) {
      problems.push_back(fmt::format("orphan entry in {}: {} -> {}",
                                     kFamilies[static_cast<size_t>(std::get<0>(e))].name,
                                     Printable(std::get<1>(e)), Printable(std::get<2>(e))));
    }
  }
  std::map<std::string, std::string> idem;  // idempotency key -> id
  each(Family::kIdem, [&](std::string key, std::string id) { idem.emplace(key, id); });
  for (const Entry& e : expected) {
    const auto& [family, key, value] = e;
    char tag = 0;
    int64_t finished_ms = 0;
    std::string_view id;
    if (family == Family::kDone && ParseDoneKey(key, tag, finished_ms, id) &&
        tag == kIdemExpiryTag) {
      // Gone once the key expired: then the key must not name this record any more.
      auto holder = idem.find(value);
      if (!found.contains(e) && holder != idem.end() && holder->second == id) {
        problems.push_back(
            fmt::format("idempotency key {} of {} has no expiry entry", Printable(value), id));
      }
      continue;
    }
    if (!found.contains(e)) {
      problems.push_back(fmt::format("missing entry in {}: {}",
                                     kFamilies[static_cast<size_t>(std::get<0>(e))].name,
                                     Printable(std::get<1>(e))));
    }
  }
  for (const auto& [key, id] : idem) {
    auto it = records.find(id);
    if (it == records.end()) {
      problems.push_back(fmt::format("idempotency key {} names missing {}", Printable(key), id));
    } else if (IdemKey(it->second.tenant, it->second.idempotency_key) != key) {
      problems.push_back(
          fmt::format("idempotency key {} names {}, whose key differs", Printable(key), id));
    }
  }
  for (DeliveryState state : kAllStates) {
    std::string value;
    int64_t stored = 0;
    if (db->Get(rocksdb::ReadOptions(), handles[static_cast<size_t>(Family::kMeta)],
                CountKey(state), &value)
            .ok()) {
      stored = DecodeCounter(value);
    }
    if (stored != counted[state]) {
      problems.push_back(
          fmt::format("counter of {} is {}, records {}", StateName(state), stored, counted[state]));
    }
  }
  // Every stored-bytes counter, against the records of its tenant.
  std::map<std::string, int64_t> counters;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db->NewIterator(rocksdb::ReadOptions(), handles[static_cast<size_t>(Family::kMeta)]));
    const rocksdb::Slice prefix(kStoredBytesPrefix.data(), kStoredBytesPrefix.size());
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const int64_t n = DecodeCounter(it->value().ToStringView());
      if (n != 0) {
        counters.emplace(it->key().ToString().substr(prefix.size()), n);
      }
    }
  }
  std::erase_if(stored_bytes, [](const auto& kv) { return kv.second == 0; });
  if (counters != stored_bytes) {
    for (const auto& [tenant, n] : stored_bytes) {
      if (auto it = counters.find(tenant); it == counters.end() || it->second != n) {
        problems.push_back(fmt::format("stored bytes of tenant {} are {}, records {}",
                                       Printable(tenant), it == counters.end() ? 0 : it->second,
                                       n));
      }
    }
    for (const auto& [tenant, n] : counters) {
      if (!stored_bytes.contains(tenant)) {
        problems.push_back(
            fmt::format("stored bytes of tenant {} are {}, no records", Printable(tenant), n));
      }
    }
  }
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
  return problems;
}

}  // namespace egress::storage
