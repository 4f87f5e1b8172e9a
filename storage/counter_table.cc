#include "storage/counter_table.h"

#include <algorithm>
#include <array>
#include <memory>

#include "storage/delivery.h"
#include "storage/index_keys.h"
#include "storage/rocks_schema.h"

namespace egress::storage {
namespace {

// A waiting state's destination counter key split (SplitDestCountKey) into the destination and
// the state's place in its DestCounts (state - 1): false for any other (a terminal state's
// included).
bool SplitWaitingCountKey(std::string_view key, size_t& index, std::string_view& dest) {
  DeliveryState state{};
  if (!SplitDestCountKey(key, state, dest) || state > DeliveryState::kDeferred) {
    return false;
  }
  index = static_cast<size_t>(state) - 1;
  return true;
}

}  // namespace

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
  values_ = {};
  dest_values_ = {};
  groups_.clear();
  for (const auto& [key, n] : loaded) {
    std::string_view dest;
    Slot(key, dest) = n;
    MoveGroup(key, 0, n);
  }
  return Status::Ok();
}

int64_t& CounterTable::Slot(std::string_view key, std::string_view& dest) {
  size_t index = 0;
  if (SplitWaitingCountKey(key, index, dest)) {
    auto it = dest_values_.find(dest);
    if (it == dest_values_.end()) {
      it = dest_values_.emplace(std::string(dest), DestCounts{}).first;
    }
    return it->second[index];
  }
  dest = {};
  auto it = values_.find(key);
  if (it == values_.end()) {
    it = values_.emplace(std::string(key), 0).first;
  }
  return it->second;
}

void CounterTable::Drop(std::string_view key, std::string_view dest) {
  if (dest.data() == nullptr) {
    values_.erase(values_.find(key));
    return;
  }
  auto it = dest_values_.find(dest);
  if (std::all_of(it->second.begin(), it->second.end(), [](int64_t v) { return v == 0; })) {
    dest_values_.erase(it);  // memory follows the destinations with work
  }
}

void CounterTable::MoveGroup(std::string_view key, int64_t before, int64_t after) {
  const int64_t change = std::max<int64_t>(0, after) - std::max<int64_t>(0, before);
  DestCountKeyParts parts;
  if (change == 0 || !ParseDestCountKey(key, parts)) {
    return;
  }
  const std::pair<std::string_view, std::string_view> group(parts.tenant, parts.platform);
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    it = groups_.emplace(GroupKey(group.first, group.second), StateCounts{}).first;
  }
  uint64_t& n = it->second[static_cast<size_t>(parts.state) - 1];
  n = static_cast<uint64_t>(static_cast<int64_t>(n) + change);
  if (std::all_of(it->second.begin(), it->second.end(), [](uint64_t v) { return v == 0; })) {
    groups_.erase(it);  // memory follows the groups with work
  }
}

std::vector<GroupCounts> CounterTable::Groups() const {
  // Copied kGroupsPerHold at a time, the lock let go between: every write takes it, and copying
  // 10,000 groups in one hold (two strings each) kept writes waiting 5-6 ms
  // (bench/README.md, section 12).
  constexpr size_t kGroupsPerHold = 512;
  std::vector<GroupCounts> out;
  std::unique_lock<std::mutex> lock(mu_);
  out.reserve(groups_.size());
  auto it = groups_.begin();
  while (it != groups_.end()) {
    for (size_t n = 0; n < kGroupsPerHold && it != groups_.end(); ++n, ++it) {
      out.push_back({it->first.first, it->first.second, it->second});
    }
    lock.unlock();
    lock.lock();
    it = groups_.upper_bound(
        std::pair<std::string_view, std::string_view>(out.back().tenant, out.back().platform));
  }
  return out;
}

std::vector<GroupCounts> CounterTable::GroupsOf(std::string_view tenant) const {
  std::vector<GroupCounts> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = groups_.lower_bound(std::pair<std::string_view, std::string_view>(tenant, ""));
       it != groups_.end() && it->first.first == tenant; ++it) {
    out.push_back({it->first.first, it->first.second, it->second});
  }
  return out;
}

void CounterTable::Apply(std::initializer_list<const CounterDeltas*> sets) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const CounterDeltas* deltas : sets) {
    for (const auto& [key, delta] : deltas->deltas()) {
      if (delta == 0) {
        continue;
      }
      std::string_view dest;
      int64_t& value = Slot(key, dest);
      const int64_t before = value;
      value += delta;
      MoveGroup(key, before, value);
      if (value == 0) {
        Drop(key, dest);  // memory follows the counters in use
      }
    }
  }
}

size_t CounterTable::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return values_.size() + dest_values_.size();
}

int64_t CounterTable::Get(std::string_view key) const {
  size_t index = 0;
  std::string_view dest;
  std::lock_guard<std::mutex> lock(mu_);
  if (SplitWaitingCountKey(key, index, dest)) {
    auto it = dest_values_.find(dest);
    return it == dest_values_.end() ? 0 : it->second[index];
  }
  auto it = values_.find(key);
  return it == values_.end() ? 0 : it->second;
}

}  // namespace egress::storage
