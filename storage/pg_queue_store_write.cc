// The PgQueueStore methods that change deliveries: intake, state changes, leases. Each write is
// one transaction (Transact).

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "storage/pg_queue_store_internal.h"
#include "storage/store_steps.h"

namespace egress::storage {
namespace {

// Locks a set of stripes in address order, so two holders never wait on each other.
class Stripes {
 public:
  void Add(std::mutex& m) { mutexes_.insert(&m); }
  void LockAll() {
    for (std::mutex* m : mutexes_) {
      locks_.emplace_back(*m);
    }
  }

 private:
  std::set<std::mutex*> mutexes_;
  std::vector<std::unique_lock<std::mutex>> locks_;
};

}  // namespace

Result<EnqueueResult> PgQueueStore::Enqueue(const NewDelivery& in, int64_t now_ms) {
  Result<std::vector<Result<EnqueueResult>>> batch = EnqueueBatch({in}, now_ms);
  if (!batch) {
    return batch.error();
  }
  return std::move(batch->front());
}

Result<std::vector<Result<EnqueueResult>>> PgQueueStore::EnqueueBatch(
    const std::vector<NewDelivery>& ds, int64_t now_ms) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  // Every slot is set below; the placeholder is never returned.
  std::vector<Result<EnqueueResult>> results(ds.size(), Status::Unavailable("not stored"));
  // Valid items get a delivery; a repeated key within the batch answers the first's id.
  std::vector<Delivery> fresh;
  std::vector<size_t> fresh_item;                               // fresh[i] is for ds[fresh_item[i]]
  std::map<std::pair<std::string, std::string>, size_t> keyed;  // (tenant, key) -> fresh index
  std::vector<std::pair<size_t, size_t>> repeats;               // item, fresh index
  for (size_t i = 0; i < ds.size(); ++i) {
    if (Status s = ValidateNewDelivery(ds[i], options_); !s.ok()) {
      results[i] = std::move(s);
      continue;
    }
    if (!ds[i].idempotency_key.empty()) {
      auto [it, added] =
          keyed.emplace(std::pair(ds[i].tenant, ds[i].idempotency_key), fresh.size());
      if (!added) {
        repeats.emplace_back(i, it->second);
        continue;
      }
    }
    fresh.push_back(NewQueuedDelivery(ds[i], ids_.Next(now_ms), now_ms));
    fresh_item.push_back(i);
  }
  auto c = Take();
  if (!c) {
    return c.error();
  }
  // The id each keyed delivery's key already names (created = false), by fresh index.
  std::map<size_t, std::string> existing;
  PgWrite w;
  Status s = Transact(*c, w, [&]() -> Status {
    if (!keyed.empty()) {
      // Claims every key at once, in key order (two batches never wait on each other's keys in
      // opposite orders). A key another transaction holds uncommitted waits for its outcome.
      std::vector<std::string> tenants, keys, ids;
      for (const auto& [tk, f] : keyed) {
        tenants.push_back(tk.first);
        keys.push_back(tk.second);
        ids.push_back(fresh[f].id);
      }
      auto claimed = Q(*c,
                       "INSERT INTO egress_idem (tenant, key, id) SELECT t, k, i FROM "
                       "unnest($1::bytea[], $2::bytea[], $3::text[]) WITH ORDINALITY "
                       "AS u(t, k, i, o) ORDER BY o ON CONFLICT DO NOTHING RETURNING id",
                       PgParams().BytesArray(tenants).BytesArray(keys).TextArray(ids));
      if (!claimed) {
        return claimed.error();
      }
      if (claimed->rows() != static_cast<int>(keyed.size())) {
        std::set<std::string_view> mine;
        for (int r = 0; r < claimed->rows(); ++r) {
          mine.insert(claimed->Bytes(r, 0));
        }
        auto held = Q(*c,
                      "SELECT i.tenant, i.key, i.id FROM egress_idem i JOIN unnest($1::bytea[], "
                      "$2::bytea[]) AS u(t, k) ON i.tenant = u.t AND i.key = u.k",
                      PgParams().BytesArray(tenants).BytesArray(keys));
        if (!held) {
          return held.error();
        }
        std::map<std::pair<std::string, std::string>, std::string> holder;
        for (int r = 0; r < held->rows(); ++r) {
          holder[{std::string(held->Bytes(r, 0)), std::string(held->Bytes(r, 1))}] =
              std::string(held->Bytes(r, 2));
        }
        for (const auto& [tk, f] : keyed) {
          if (mine.contains(fresh[f].id)) {
            continue;
          }
          auto h = holder.find(tk);
          if (h == holder.end()) {
            // Released between the two statements (retention): the caller retries.
            return Status::Unavailable("idempotency key released during enqueue; retry");
          }
          existing[f] = h->second;
        }
      }
    }
    for (size_t f = 0; f < fresh.size(); ++f) {
      if (!existing.contains(f)) {
        Stage(w, nullptr, &fresh[f], 0);
      }
    }
    return WriteRows(*c, w);
  });
  if (!s.ok()) {
    return s;
  }
  for (size_t f = 0; f < fresh.size(); ++f) {
    auto e = existing.find(f);
    results[fresh_item[f]] =
        e == existing.end() ? EnqueueResult{fresh[f].id, true} : EnqueueResult{e->second, false};
  }
  for (const auto& [item, f] : repeats) {
    auto e = existing.find(f);
    results[item] = EnqueueResult{e == existing.end() ? fresh[f].id : e->second, false};
  }
  return results;
}

Result<Delivery> PgQueueStore::Apply(const std::string& id, const StateChange& change) {
  Result<std::vector<Result<Delivery>>> batch = ApplyBatch({{id, change}});
  if (!batch) {
    return batch.error();
  }
  return std::move(batch->front());
}

Result<std::vector<Result<Delivery>>> PgQueueStore::ApplyBatch(
    const std::vector<IdChange>& changes) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  if (changes.empty()) {
    return std::vector<Result<Delivery>>();  // nothing to read or write
  }
  Stripes stripes;
  std::vector<std::string> ids;
  for (const auto& [id, change] : changes) {
    stripes.Add(IdStripe(id));
    ids.push_back(id);
  }
  stripes.LockAll();
  auto c = Take();
  if (!c) {
    return c.error();
  }
  // A batch of leases alone writes nothing to the database (a lease is this store's memory), so
  // its rows are read without a transaction or row locks: a lock would end with the read anyway,
  // long before the delivery is sent, yet cost a WAL record per row and a flush at the commit.
  // Should such a batch turn out to write after all (a charge), it runs again, locked.
  bool lock = !std::all_of(changes.begin(), changes.end(), [&](const IdChange& ch) {
    return ch.second.to == DeliveryState::kInFlight && !leases_.Contains(ch.first);
  });
  std::vector<Result<Delivery>> results;
  PgWrite w;
  auto body = [&]() -> Status {
    results.clear();
    results.reserve(changes.size());
    w = PgWrite();
    // Every row of the batch, locked in id order until the commit; a leased one's record is
    // this store's memory, so only its state and due time are read (to check the lease).
    // With shard leases, each row's shard row too, FOR KEY SHARE until the commit: a claim of
    // the shard by another node (FOR UPDATE, epoch + 1) waits for this transaction, or this one
    // sees the claim's epoch (pg_shard_leases.h, "Fencing").
    auto rows = Q(*c,
                  !lock     ? "SELECT d.id, d.state::int8, d.due_ms, (octet_length(d.id) + "
                              "octet_length(d.record))::int8, d.record, d.shard::int8, "
                              "coalesce(sh.owner, ''), sh.epoch FROM egress_deliveries d JOIN "
                              "egress_shards sh ON sh.shard = d.shard WHERE d.id = ANY($1::text[])"
                  : shards_ ? "SELECT d.id, d.state::int8, d.due_ms, (octet_length(d.id) + "
                              "octet_length(d.record))::int8, d.record, d.shard::int8, "
                              "coalesce(sh.owner, ''), sh.epoch FROM egress_deliveries d JOIN "
                              "egress_shards sh ON sh.shard = d.shard WHERE d.id = "
                              "ANY($1::text[]) ORDER BY d.id FOR UPDATE OF d FOR KEY SHARE OF sh"
                            : "SELECT id, state::int8, due_ms, (octet_length(id) + "
                              "octet_length(record))::int8, record, shard::int8, ''::text, "
                              "0::int8 FROM egress_deliveries WHERE id = ANY($1::text[]) ORDER BY "
                              "id FOR UPDATE",
                  PgParams().TextArray(ids));
    if (!rows) {
      return rows.error();
    }
    struct Row {
      int64_t state, due_ms;
      uint64_t bytes;
      std::string_view record;
      int64_t shard;
      std::string_view owner;
      int64_t epoch;
    };
    std::map<std::string_view, Row> found;
    for (int r = 0; r < rows->rows(); ++r) {
      found[rows->Bytes(r, 0)] = {
          rows->Int(r, 1),   rows->Int(r, 2), static_cast<uint64_t>(rows->Int(r, 3)),
          rows->Bytes(r, 4), rows->Int(r, 5), rows->Bytes(r, 6),
          rows->Int(r, 7)};
    }
    struct Tracked {
      Lease v;  // as the RocksDB store's ApplyBatch: the newest version and the disk's
      bool leased = false;
      bool was_leased = false;
    };
    std::map<std::string_view, Tracked> changed;
    for (const auto& [id, change] : changes) {
      auto it = changed.find(id);
      if (it == changed.end()) {
        Tracked t;
        auto row = found.find(id);
        std::optional<Lease> lease = leases_.Find(id);
        if (lease &&
            (row == found.end() || row->second.state != static_cast<int64_t>(lease->disk_state) ||
             row->second.due_ms != lease->disk_next_attempt_ms)) {
          // Changed under the lease (another store wrote it): the row stands, the lease goes.
          StageInMemory(w, lease->delivery, lease->DiskVersion());
          w.leases.emplace_back(id, std::nullopt);
          results.emplace_back(Status::FailedPrecondition(
              fmt::format("delivery {} changed while leased; its stored version stands", id)));
          continue;
        }
        if (shards_ && row != found.end() && (lease || change.as_owner)) {
          // A write as the shard's owner: only under this node's epoch of the shard.
          const Row& r = row->second;
          Status owner = CheckOwner(id, r.shard, r.owner, r.epoch);
          if (owner.ok() && change.as_owner && change.to == DeliveryState::kInFlight &&
              !shards_->MayDispatch(static_cast<int>(r.shard))) {
            owner = Status::Unavailable(
                fmt::format("delivery {}: this node may not dispatch shard {} now", id, r.shard));
          }
          if (!owner.ok()) {
            if (lease) {
              StageInMemory(w, lease->delivery, lease->DiskVersion());
              w.leases.emplace_back(id, std::nullopt);
            }
            results.emplace_back(std::move(owner));
            continue;
          }
        }
        if (lease) {
          t.v = std::move(*lease);
          t.v.disk_bytes = row->second.bytes;
          t.leased = t.was_leased = true;
        } else if (row == found.end()) {
          results.emplace_back(Status::NotFound(fmt::format("delivery {} not found", id)));
          continue;
        } else if (Result<Delivery> d = Decode(row->second.record); !d) {
          results.emplace_back(
              Status::Corruption(fmt::format("delivery {}: {}", id, d.error().message())));
          continue;
        } else {
          t.v.delivery = std::move(*d);
          t.v.disk_bytes = row->second.bytes;
        }
        it = changed.emplace(id, std::move(t)).first;
      }
      Tracked& t = it->second;
      Delivery& current = t.v.delivery;
      Delivery after = current;
      if (Status st = ApplyChange(change, options_.history_limit, after); !st.ok()) {
        results.emplace_back(std::move(st));
        continue;
      }
      if (after.state == DeliveryState::kInFlight) {
        StageInMemory(w, current, after);
        t.leased = true;
        t.v.disk_state = current.state;
        t.v.disk_next_attempt_ms = current.next_attempt_ms;
      } else if (t.leased) {
        const Delivery disk = t.v.DiskVersion();
        StageInMemory(w, current, disk);
        t.v.disk_bytes = Stage(w, &disk, &after, t.v.disk_bytes);
        t.leased = false;
      } else {
        t.v.disk_bytes = Stage(w, &current, &after, t.v.disk_bytes);
      }
      current = std::move(after);
      results.emplace_back(current);
    }
    for (auto& [id, t] : changed) {
      if (t.leased) {
        w.leases.emplace_back(std::string(id), std::move(t.v));
      } else if (t.was_leased) {
        w.leases.emplace_back(std::string(id), std::nullopt);
      }
    }
    // Unlocked, nothing is written: a batch that would write runs again in a transaction.
    return lock ? WriteRows(*c, w) : Status::Ok();
  };
  Status s;
  if (!lock) {
    s = body();
    if (s.ok() && !w.writes()) {
      ApplyMemory(w);
      return results;
    }
    lock = true;
  }
  s = Transact(*c, w, body);
  if (!s.ok()) {
    return s;
  }
  return results;
}

Status PgQueueStore::CheckOwner(const std::string& id, int64_t shard, std::string_view owner,
                                int64_t epoch) const {
  if (!shards_) {
    return Status::Ok();
  }
  const std::optional<int64_t> held = shards_->EpochOf(static_cast<int>(shard));
  if (held && *held == epoch && owner == shards_->node_id()) {
    return Status::Ok();
  }
  return Status::Rejected(
      fmt::format("delivery {}: shard {} is no longer this node's (epoch {} of {}); the stored "
                  "version stands",
                  id, shard, epoch, owner.empty() ? std::string_view("nobody") : owner));
}

Result<std::vector<Delivery>> PgQueueStore::LeaseDue(int64_t now_ms, size_t max) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::lock_guard<std::mutex> lease(lease_mu_);
  auto c = Take();
  if (!c) {
    return c.error();
  }
  std::vector<std::string> leased_ids;
  leases_.Visit("", [&](const Delivery& d) {
    leased_ids.push_back(d.id);
    return true;
  });
  // Candidates: up to `max` deferred ones due by now in due order and up to `max` queued ones in
  // id order, passing over this store's leases (their rows still say waiting).
  auto candidates =
      Q(*c,
        "(SELECT id FROM egress_deliveries WHERE state = 3 AND due_ms <= $1 AND "
        "id <> ALL($2::text[]) ORDER BY due_ms, id LIMIT $3) UNION ALL "
        "(SELECT id FROM egress_deliveries WHERE state = 1 AND due_ms <= $1 AND "
        "id <> ALL($2::text[]) ORDER BY id LIMIT $3)",
        PgParams().Int64(now_ms).TextArray(leased_ids).Int64(static_cast<int64_t>(max)));
  if (!candidates) {
    return candidates.error();
  }
  std::vector<std::string> ids;
  Stripes stripes;
  for (int r = 0; r < candidates->rows(); ++r) {
    ids.emplace_back(candidates->Bytes(r, 0));
    stripes.Add(IdStripe(ids.back()));
  }
  std::vector<Delivery> leased;
  if (ids.empty()) {
    return leased;
  }
  stripes.LockAll();
  // Read again under the stripes: a change of this store since the scan is on the row now.
  auto rows = Q(*c,
                "SELECT id, (octet_length(id) + octet_length(record))::int8, record, "
                "shard::int8 FROM egress_deliveries WHERE id = ANY($1::text[]) AND "
                "state IN (1, 3) AND due_ms <= $2",
                PgParams().TextArray(ids).Int64(now_ms));
  if (!rows) {
    return rows.error();
  }
  struct Due {
    Delivery d;
    uint64_t disk_bytes = 0;
  };
  std::vector<Due> due;
  for (int r = 0; r < rows->rows(); ++r) {
    if (leases_.Contains(rows->Bytes(r, 0))) {
      continue;  // leased since the scan
    }
    if (shards_ && !shards_->MayDispatch(static_cast<int>(rows->Int(r, 3)))) {
      continue;  // another node's work
    }
    Result<Delivery> d = Decode(rows->Bytes(r, 2));
    if (!d) {
      return Status::Corruption(
          fmt::format("delivery {}: {}", rows->Bytes(r, 0), d.error().message()));
    }
    due.push_back({std::move(*d), static_cast<uint64_t>(rows->Int(r, 1))});
  }
  // Earliest due first; a queued and a deferred delivery due at the same time go in id order.
  std::sort(due.begin(), due.end(), [](const Due& x, const Due& y) {
    return x.d.next_attempt_ms != y.d.next_attempt_ms ? x.d.next_attempt_ms < y.d.next_attempt_ms
                                                      : x.d.id < y.d.id;
  });
  if (due.size() > max) {
    due.resize(max);
  }
  PgWrite w;
  const StateChange change{.to = DeliveryState::kInFlight, .at_ms = now_ms};
  for (auto& [d, disk_bytes] : due) {
    Delivery before = d;
    if (Status s = ApplyChange(change, options_.history_limit, d); !s.ok()) {
      return s;
    }
    StageInMemory(w, before, d);
    w.leases.emplace_back(d.id, Lease{d, before.state, before.next_attempt_ms, disk_bytes});
    leased.push_back(std::move(d));
  }
  ApplyMemory(w);  // nothing is written for a lease
  return leased;
}

}  // namespace egress::storage
