// The PgQueueStore methods that only read.

#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "dispatcher/base/platform.h"
#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/pg_queue_store_internal.h"
#include "storage/store_steps.h"

namespace egress::storage {
namespace {

// Rows fetched per statement by scans (records hold payloads of up to 1 MiB).
constexpr int64_t kScanChunk = 64;

}  // namespace

Result<Delivery> PgQueueStore::ReadCurrent(PgPool::Use& c, const std::string& id, uint64_t* bytes) {
  if (std::optional<Lease> lease = leases_.Find(id)) {
    if (bytes != nullptr) {
      *bytes = lease->disk_bytes;
    }
    return std::move(lease->delivery);
  }
  auto r = Q(c, "SELECT record FROM egress_deliveries WHERE id = $1", PgParams().Text(id));
  if (!r) {
    return r.error();
  }
  if (r->rows() == 0) {
    return Status::NotFound(fmt::format("delivery {} not found", id));
  }
  if (bytes != nullptr) {
    *bytes = id.size() + r->Bytes(0, 0).size();
  }
  Result<Delivery> d = Decode(r->Bytes(0, 0));
  if (!d) {
    return Status::Corruption(fmt::format("delivery {}: {}", id, d.error().message()));
  }
  return d;
}

Result<Delivery> PgQueueStore::Get(const std::string& id) {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  return ReadCurrent(*c, id);
}

Result<std::vector<Delivery>> PgQueueStore::GetMany(const std::vector<std::string>& ids) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::vector<Delivery> out;
  std::vector<std::string> unleased;
  std::map<std::string, Delivery, std::less<>> found;
  for (const std::string& id : ids) {
    if (std::optional<Lease> lease = leases_.Find(id)) {
      found.emplace(id, std::move(lease->delivery));
    } else {
      unleased.push_back(id);
    }
  }
  if (!unleased.empty()) {
    auto c = Take();
    if (!c) {
      return c.error();
    }
    auto r = Q(*c, "SELECT id, record FROM egress_deliveries WHERE id = ANY($1::text[])",
               PgParams().TextArray(unleased));
    if (!r) {
      return r.error();
    }
    for (int i = 0; i < r->rows(); ++i) {
      Result<Delivery> d = Decode(r->Bytes(i, 1));
      if (!d) {
        return Status::Corruption(
            fmt::format("delivery {}: {}", r->Bytes(i, 0), d.error().message()));
      }
      found.emplace(std::string(r->Bytes(i, 0)), std::move(*d));
    }
  }
  for (const std::string& id : ids) {
    if (auto it = found.find(id); it != found.end()) {
      out.push_back(it->second);
    }
  }
  return out;
}

Result<std::vector<std::string>> PgQueueStore::ListDestinations(const std::string& after_key,
                                                                size_t limit) {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  // One index probe per destination (a loose index scan), not one row per delivery. Keys this
  // node does not dispatch (shard leases) or that do not open are passed over, and the scan goes
  // on until `limit` are found or the destinations end, so a short answer means the end.
  std::vector<std::string> out;
  std::string after = after_key.empty() ? std::string() : seal_.StoredKey(after_key);
  while (out.size() < limit) {
    auto r = Q(*c,
               "WITH RECURSIVE t(k) AS ("
               " (SELECT dest_key FROM egress_deliveries WHERE state IN (1, 2, 3) AND"
               "  dest_key > $1 ORDER BY dest_key LIMIT 1)"
               " UNION ALL"
               " SELECT (SELECT dest_key FROM egress_deliveries WHERE state IN (1, 2, 3) AND"
               "  dest_key > t.k ORDER BY dest_key LIMIT 1) FROM t WHERE t.k IS NOT NULL)"
               " SELECT k FROM t WHERE k IS NOT NULL LIMIT $2",
               PgParams().Bytes(after).Int64(static_cast<int64_t>(limit)));
    if (!r) {
      return r.error();
    }
    for (int i = 0; i < r->rows() && out.size() < limit; ++i) {
      const std::string_view stored = r->Bytes(i, 0);
      after = std::string(stored);
      if (shards_ && !shards_->MayDispatch(PgShardOf(stored))) {
        continue;
      }
      // A sealed key that does not open (damaged) is passed over, as the RocksDB store does.
      if (Result<std::string> key = seal_.OpenKey(stored); key) {
        out.push_back(std::move(*key));
      }
    }
    if (r->rows() < static_cast<int>(limit)) {
      break;
    }
  }
  return out;
}

Result<DestinationWork> PgQueueStore::PendingFor(const std::string& destination_key,
                                                 const std::string& after_id, size_t limit) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  DestinationWork work{destination_key, {}, {}};
  const std::string stored_key = seal_.StoredKey(destination_key);
  DestinationParts parts;
  if (!SplitDestinationKey(stored_key, parts)) {
    return Status::InvalidArgument("not a destination key");
  }
  auto c = Take();
  if (!c) {
    return c.error();
  }
  auto r = Q(*c,
             "SELECT id, record FROM egress_deliveries WHERE dest_key = $1 AND state IN (1, 2, 3)"
             " AND id > $2 ORDER BY id LIMIT $3",
             PgParams().Bytes(stored_key).Text(after_id).Int64(static_cast<int64_t>(limit)));
  if (!r) {
    return r.error();
  }
  for (int i = 0; i < r->rows(); ++i) {
    const std::string_view id = r->Bytes(i, 0);
    if (std::optional<Delivery> leased = leases_.FindDelivery(id)) {
      work.deliveries.push_back(std::move(*leased));
      continue;
    }
    Result<Delivery> d = DecodeUnderDestination(r->Bytes(i, 1), id, parts, seal_);
    if (!d) {
      work.corrupt.push_back({std::string(id), d.error().message()});
      continue;
    }
    work.deliveries.push_back(std::move(*d));
  }
  return work;
}

Result<ListPage> PgQueueStore::List(const ListFilter& filter) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  ListPage page;
  if (filter.since_ms && filter.until_ms && *filter.since_ms >= *filter.until_ms) {
    return page;
  }
  if (filter.state == DeliveryState::kInFlight) {
    return ListLeased(leases_, filter);
  }
  auto c = Take();
  if (!c) {
    return c.error();
  }
  std::string start = filter.after_id;
  if (filter.since_ms) {
    start = std::max(start, DeliveryIdFloor(*filter.since_ms));
  }
  const int64_t state = filter.state ? static_cast<int64_t>(*filter.state) : 0;
  size_t scanned = 0;
  std::string examined;  // the last id examined: the cursor when the page stops early
  std::string last_id;   // the last id fetched: the next chunk starts after it
  bool first = true;     // the first chunk starts at `start` inclusive
  for (;;) {
    // One text per shape, so each has a plan of its own (plans are made once per connection,
    // pg_connection.h): with a state, the (state, id) index; without, the primary key.
    static constexpr const char* kChunk[2][2] = {
        {"SELECT id, record FROM egress_deliveries WHERE $1 = 0 AND id > $2 ORDER BY id LIMIT $3",
         "SELECT id, record FROM egress_deliveries WHERE $1 = 0 AND id >= $2 ORDER BY id "
         "LIMIT $3"},
        {"SELECT id, record FROM egress_deliveries WHERE state = $1 AND id > $2 ORDER BY id "
         "LIMIT $3",
         "SELECT id, record FROM egress_deliveries WHERE state = $1 AND id >= $2 ORDER BY id "
         "LIMIT $3"}};
    auto r = Q(*c, kChunk[state != 0][first],
               PgParams()
                   .Int32(static_cast<int32_t>(state))
                   .Text(first ? start : last_id)
                   .Int64(kScanChunk));
    first = false;
    if (!r) {
      return r.error();
    }
    for (int i = 0; i < r->rows(); ++i) {
      std::string id(r->Bytes(i, 0));
      last_id = id;
      if (id <= filter.after_id) {
        continue;
      }
      if (page.deliveries.size() == filter.limit || scanned == kMaxListScan) {
        page.next_cursor = examined;
        return page;
      }
      ++scanned;
      // A leased delivery is in_flight, whatever its row says.
      std::optional<Delivery> leased = leases_.FindDelivery(id);
      Result<Delivery> d = leased ? std::move(*leased) : Decode(r->Bytes(i, 1));
      if (!d) {
        return Status::Corruption(fmt::format("delivery {}: {}", id, d.error().message()));
      }
      examined = id;
      if (MatchesListFilter(filter, *d)) {
        page.deliveries.push_back(std::move(*d));
      }
    }
    if (r->rows() < kScanChunk) {
      return page;
    }
  }
}

Result<CounterMap> PgQueueStore::SumCounters(PgPool::Use& c, const std::vector<std::string>& keys) {
  auto r = Q(c,
             "SELECT key, sum(n)::int8 FROM egress_counters WHERE key = ANY($1::bytea[]) "
             "GROUP BY key",
             PgParams().BytesArray(keys));
  if (!r) {
    return r.error();
  }
  CounterMap out;
  for (int i = 0; i < r->rows(); ++i) {
    out[std::string(r->Bytes(i, 0))] = r->Int(i, 1);
  }
  std::lock_guard<std::mutex> lock(lease_counts_mu_);
  for (const std::string& key : keys) {
    if (auto it = lease_counts_.find(key); it != lease_counts_.end()) {
      out[key] += it->second;
    }
  }
  return out;
}

Result<CounterMap> PgQueueStore::SumCountersWithPrefix(PgPool::Use& c, std::string_view prefix) {
  // The keys from `prefix` up to the prefix with its last byte raised (prefixes end in '/').
  std::string upper(prefix);
  upper.back() = static_cast<char>(upper.back() + 1);
  auto r = Q(c,
             "SELECT key, sum(n)::int8 FROM egress_counters WHERE key >= $1 AND key < $2 "
             "GROUP BY key HAVING sum(n) <> 0",
             PgParams().Bytes(prefix).Bytes(upper));
  if (!r) {
    return r.error();
  }
  CounterMap out;
  for (int i = 0; i < r->rows(); ++i) {
    out[std::string(r->Bytes(i, 0))] = r->Int(i, 1);
  }
  return out;
}

Result<StateCounts> PgQueueStore::Counts() {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  std::vector<std::string> keys;
  for (DeliveryState state : kAllStates) {
    keys.push_back(CountKey(state));
  }
  Result<CounterMap> sums = SumCounters(*c, keys);
  if (!sums) {
    return sums.error();
  }
  StateCounts counts{};
  for (DeliveryState state : kAllStates) {
    const int64_t n = (*sums)[CountKey(state)];
    if (n < 0) {
      return Status::Corruption(fmt::format("counter of {} is negative ({})", StateName(state), n));
    }
    counts[static_cast<size_t>(state) - 1] = static_cast<uint64_t>(n);
  }
  return counts;
}

Result<uint64_t> PgQueueStore::TenantBacklog(const std::string& tenant) {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  const std::string key = BacklogKey(tenant);
  Result<CounterMap> sums = SumCounters(*c, {key});
  if (!sums) {
    return sums.error();
  }
  const int64_t n = (*sums)[key];
  return n < 0 ? uint64_t{0} : static_cast<uint64_t>(n);
}

Result<std::vector<StateCounts>> PgQueueStore::DestinationCounts(
    const std::vector<std::string>& destination_keys) {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  constexpr DeliveryState kLive[] = {DeliveryState::kQueued, DeliveryState::kInFlight,
                                     DeliveryState::kDeferred};
  std::vector<std::string> keys;
  for (const std::string& dest : destination_keys) {
    for (DeliveryState state : kLive) {
      keys.push_back(DestCountKey(seal_.StoredKey(dest), state));
    }
  }
  Result<CounterMap> sums = SumCounters(*c, keys);
  if (!sums) {
    return sums.error();
  }
  std::vector<StateCounts> out(destination_keys.size(), StateCounts{});
  for (size_t i = 0; i < destination_keys.size(); ++i) {
    for (size_t j = 0; j < 3; ++j) {
      const int64_t n = (*sums)[keys[i * 3 + j]];
      out[i][static_cast<size_t>(kLive[j]) - 1] = n < 0 ? 0 : static_cast<uint64_t>(n);
    }
  }
  return out;
}

Result<std::vector<GroupCounts>> PgQueueStore::BacklogByTenantPlatform() {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  Result<CounterMap> sums = SumCountersWithPrefix(*c, "destcount/");
  if (!sums) {
    return sums.error();
  }
  {
    std::lock_guard<std::mutex> lock(lease_counts_mu_);
    for (const auto& [key, n] : lease_counts_) {
      if (key.starts_with("destcount/")) {
        (*sums)[key] += n;
      }
    }
  }
  std::map<std::pair<std::string, std::string>, StateCounts> groups;
  for (const auto& [key, n] : *sums) {
    DestCountKeyParts parts;
    if (n > 0 && ParseDestCountKey(key, parts)) {
      groups[{std::string(parts.tenant), std::string(parts.platform)}]
            [static_cast<size_t>(parts.state) - 1] += static_cast<uint64_t>(n);
    }
  }
  std::vector<GroupCounts> out;
  for (const auto& [group, counts] : groups) {
    out.push_back({group.first, group.second, counts});
  }
  return out;
}

Result<std::vector<GroupCounts>> PgQueueStore::TenantBacklogByPlatform(const std::string& tenant) {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  // Each (state, platform) of the tenant is one range of the counter keys:
  // destcount/<state>/<platform> 0x1f <tenant> 0x1f ... As BacklogByTenantPlatform: a key's
  // stored sum and this node's leases together, counted when above 0.
  constexpr DeliveryState kLive[] = {DeliveryState::kQueued, DeliveryState::kInFlight,
                                     DeliveryState::kDeferred};
  CounterMap sums;
  for (Platform platform : Platforms()) {
    for (DeliveryState state : kLive) {
      Result<CounterMap> range =
          SumCountersWithPrefix(*c, fmt::format("destcount/{}/{}\x1f{}\x1f", StateName(state),
                                                PlatformString(platform), tenant));
      if (!range) {
        return range.error();
      }
      sums.insert(range->begin(), range->end());
    }
  }
  {
    std::lock_guard<std::mutex> lock(lease_counts_mu_);
    for (const auto& [key, n] : lease_counts_) {
      DestCountKeyParts parts;
      if (ParseDestCountKey(key, parts) && parts.tenant == tenant) {
        sums[key] += n;
      }
    }
  }
  std::map<std::string, StateCounts> groups;
  for (const auto& [key, n] : sums) {
    DestCountKeyParts parts;
    if (n > 0 && ParseDestCountKey(key, parts)) {
      groups[std::string(parts.platform)][static_cast<size_t>(parts.state) - 1] +=
          static_cast<uint64_t>(n);
    }
  }
  std::vector<GroupCounts> out;
  for (auto& [platform, counts] : groups) {
    out.push_back({tenant, platform, counts});
  }
  return out;
}

Status PgQueueStore::ScanRecords(
    PgPool::Use& c, const std::function<Status(std::string_view, std::string_view)>& fn) {
  std::string last;
  for (;;) {
    auto r = Q(c, "SELECT id, record FROM egress_deliveries WHERE id > $1 ORDER BY id LIMIT $2",
               PgParams().Text(last).Int64(kScanChunk));
    if (!r) {
      return r.error();
    }
    for (int i = 0; i < r->rows(); ++i) {
      if (Status s = fn(r->Bytes(i, 0), r->Bytes(i, 1)); !s.ok()) {
        return s;
      }
    }
    if (r->rows() < kScanChunk) {
      return Status::Ok();
    }
    last = std::string(r->Bytes(r->rows() - 1, 0));
  }
}

Result<StateCounts> PgQueueStore::ScanCounts() {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  StateCounts counts{};
  Status s = ScanRecords(*c, [&](std::string_view id, std::string_view bytes) -> Status {
    Result<Delivery> d = DecodeDelivery(bytes);
    if (!d) {
      return Status::Corruption(fmt::format("delivery {}: {}", id, d.error().message()));
    }
    // A lease is in memory only: the row still says queued or deferred.
    const bool leased = leases_.Contains(id);
    ++counts[static_cast<size_t>(leased ? DeliveryState::kInFlight : d->state) - 1];
    return Status::Ok();
  });
  if (!s.ok()) {
    return s;
  }
  return counts;
}

Result<uint64_t> PgQueueStore::TenantStoredBytes(const std::string& tenant) {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  const std::string key = StoredBytesKey(tenant);
  Result<CounterMap> sums = SumCounters(*c, {key});
  if (!sums) {
    return sums.error();
  }
  const int64_t n = (*sums)[key];
  return n < 0 ? uint64_t{0} : static_cast<uint64_t>(n);
}

Result<std::map<std::string, uint64_t>> PgQueueStore::ScanStoredBytes() {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  std::map<std::string, uint64_t> bytes;
  size_t undecodable = 0;
  Status s = ScanRecords(*c, [&](std::string_view id, std::string_view record) -> Status {
    Result<Delivery> d = DecodeDelivery(record);
    if (!d) {
      ++undecodable;
      return Status::Ok();
    }
    bytes[d->tenant] += id.size() + record.size();
    return Status::Ok();
  });
  if (!s.ok()) {
    return s;
  }
  if (undecodable > 0) {
    return Status::Corruption(fmt::format("{} delivery records do not decode", undecodable));
  }
  return bytes;
}

pacing::SlidingWindowCounter PgQueueStore::QuotaUsage(const std::string& tenant,
                                                      const std::string& quota, int64_t now_ms) {
  return quotas_.Get(tenant, quota, now_ms);
}

Status PgQueueStore::LoadQuotas() {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  Result<CounterMap> slices = SumCountersWithPrefix(*c, kQuotaSlicePrefix);
  if (!slices) {
    return slices.error();
  }
  quotas_.Reset(*slices);
  return Status::Ok();
}

}  // namespace egress::storage
