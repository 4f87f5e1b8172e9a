// The PostgreSQL QueueStore: open, the write path every change goes through, health.
//
// Batches are written with multi-row statements: each table's rows of one transaction go in one
// statement over unnest() of binary arrays (PgParams), so a batch of 100 enqueues is BEGIN, one
// INSERT of the rows, one upsert of the counters and COMMIT (plus one idempotency insert when
// keys are given), whatever its size. libpq's pipeline mode for a transaction's writes (all of
// them in one round trip, the COMMIT after their answers) was built and measured against this in
// the three-node throughput run, alternating (2026-12-05): 4,291-4,415 delivered/s with it,
// 4,200-5,232 without, the same CPU; not kept, for a second error path that bought nothing
// measurable (bench/README.md, section 13). Statements are prepared
// and planned once per connection (PgConnection::Exec); the delivery loop lingers up to 5 ms to
// batch outcomes (docs/storage.md, "Statements").

#include "storage/pg_queue_store.h"

#include <random>

#include <fmt/format.h>

#include "storage/counter_moves.h"
#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/pg_queue_store_internal.h"
#include "storage/pg_schema.h"

namespace egress::storage {

Result<Delivery> DecodePgRecord(std::string_view bytes, const DestinationSeal& seal) {
  Result<Delivery> d = DecodeDelivery(bytes);
  if (!d) {
    return d;
  }
  Result<std::string> destination = seal.Open(d->destination);
  if (!destination) {
    return Status::Corruption(destination.error().message());
  }
  d->destination = std::move(*destination);
  return d;
}

Result<std::unique_ptr<QueueStore>> OpenPostgresQueueStore(const PostgresStoreOptions& pg,
                                                           const StoreOptions& options,
                                                           int64_t now_ms) {
  (void)now_ms;  // nothing to requeue: this store never writes a lease
  auto pool = PgPool::Open(pg.url, pg.pool_size, pg.password);
  if (!pool) {
    return pool.error();
  }
  std::string newest_id;
  {
    auto c = (*pool)->Take();
    if (!c) {
      return c.error();
    }
    if (Status s = EnsurePgSchema(**c); !s.ok()) {
      return s;
    }
    auto newest = (*c)->Exec("SELECT max(id) FROM egress_deliveries");
    if (!newest) {
      return newest.error();
    }
    if (!newest->IsNull(0, 0)) {
      newest_id = std::string(newest->Bytes(0, 0));
    }
  }
  auto store =
      std::make_unique<PgQueueStore>(options, std::move(*pool), std::random_device{}(), newest_id);
  if (Status s = store->SealSettings(); !s.ok()) {
    return s;
  }
  if (Status s = store->CheckDestinationSeal(); !s.ok()) {
    return s;
  }
  if (Status s = store->LoadQuotas(); !s.ok()) {
    return s;
  }
  if (pg.shard_leases) {
    if (pg.clock == nullptr) {
      return Status::InvalidArgument("postgres store: shard leases need a clock");
    }
    if (Status s = store->StartShardLeases(pg, *pg.shard_leases); !s.ok()) {
      return s;
    }
  }
  return std::unique_ptr<QueueStore>(std::move(store));
}

PgQueueStore::PgQueueStore(StoreOptions options, std::unique_ptr<PgPool> pool, uint64_t seed,
                           const std::string& newest_id)
    : options_(std::move(options)),
      seal_(options_.secrets_key),
      pool_(std::move(pool)),
      slot_base_(static_cast<int>(seed % kPgCounterSlots)),
      ids_(seed, newest_id) {}

PgQueueStore::~PgQueueStore() {
  // Nothing to report to: Close() tells callers who ask.
  Close().IgnoreError();
}

Status PgQueueStore::StartShardLeases(const PostgresStoreOptions& pg,
                                      const ShardLeaseOptions& options) {
  auto leases = PgShardLeases::Start(
      pg.url, pg.password, options, *pg.clock,
      [this](std::string_view key) { return seal_.StoredKey(key); },
      [this](int shard) { return HasLeasesIn(shard); },
      // Quotas are the cluster's: the other nodes' charges are read every round (a second);
      // this node's own are in memory as they commit.
      [this] { LoadQuotas().IgnoreError(); });
  if (!leases) {
    return leases.error();
  }
  shards_ = std::move(*leases);
  return Status::Ok();
}

bool PgQueueStore::HasLeasesIn(int shard) {
  bool found = false;
  leases_.Visit("", [&](const Delivery& d) {
    found = PgShardOf(DestinationKeyOf(d.platform, d.tenant, d.credential,
                                       seal_.Stored(d.destination))) == shard;
    return !found;
  });
  return found;
}

Status PgQueueStore::Close() {
  if (shards_) {
    shards_->Stop();  // before the pool goes: the leases are released for the others
  }
  std::unique_lock<std::shared_mutex> lock(pool_mu_);
  if (closed_) {
    return Status::Ok();
  }
  closed_ = true;
  leases_.Clear();  // in memory only: a lease ends with the store
  pool_.reset();
  return Status::Ok();
}

Status PgQueueStore::CheckOpen() const {
  if (closed_) {
    return Status::FailedPrecondition("store is closed");
  }
  return Status::Ok();
}

StoreHealth PgQueueStore::Health() {
  auto use = UsePool();
  return closed_ ? StoreHealth{} : pool_->Health();
}

Status PgQueueStore::Recover() {
  {
    auto use = UsePool();
    if (Status s = CheckOpen(); !s.ok()) {
      return s;
    }
    if (Status s = pool_->Recover(); !s.ok()) {
      return s;
    }
  }
  // Other nodes may have charged quotas meanwhile; leases stay: the outcome of one whose row
  // changed meanwhile fails its check against the row (ApplyBatch).
  return LoadQuotas();
}

StoreStats PgQueueStore::Stats() {
  StoreStats s;
  s.writes = commits_.load();
  s.wal_syncs = s.writes;  // one WAL flush per commit as far as this store can tell
  auto use = UsePool();
  if (closed_) {
    return s;
  }
  auto c = Take();
  if (!c) {
    return s;
  }
  auto r = Q(*c,
             "SELECT (pg_total_relation_size('egress_deliveries') + "
             "pg_total_relation_size('egress_idem') + pg_total_relation_size('egress_counters') + "
             "pg_total_relation_size('egress_settings'))::int8");
  if (r && r->rows() == 1 && r->CheckInt(0).ok()) {
    s.disk_bytes = static_cast<uint64_t>(r->Int(0, 0));
  }
  return s;
}

Result<PgResult> PgQueueStore::Q(PgPool::Use& c, std::string_view sql, const PgParams& params) {
  Result<PgResult> r = c->Exec(sql, params);
  if (!r) {
    return pool_->Note(r.error(), *c);
  }
  return r;
}

Status PgQueueStore::Run(PgPool::Use& c, std::string_view sql) {
  Status s = c->Run(sql);
  return s.ok() ? s : pool_->Note(s, *c);
}

Status PgQueueStore::Transact(PgPool::Use& c, PgWrite& w, const std::function<Status()>& body) {
  if (Status s = Run(c, "BEGIN"); !s.ok()) {
    return s;
  }
  Status s = body();
  if (s.ok()) {
    s = Run(c, "COMMIT");
    if (s.ok()) {
      if (w.writes()) {
        ++commits_;
      }
      ApplyMemory(w);
    }
    // A COMMIT that failed with the connection may still have committed (docs/storage.md,
    // "PostgreSQL"): the caller's Unavailable says retry, and an idempotency key makes the
    // retry find what landed.
    return s;
  }
  if (c->ok()) {
    // The failure is the answer; a failed ROLLBACK leaves the connection lost, which the next
    // Take reports.
    Run(c, "ROLLBACK").IgnoreError();
  }
  return s;
}

void PgQueueStore::ApplyMemory(PgWrite& w) {
  if (!w.memory_only.deltas().empty()) {
    std::lock_guard<std::mutex> lock(lease_counts_mu_);
    for (const auto& [key, delta] : w.memory_only.deltas()) {
      auto it = lease_counts_.find(key);
      if (it == lease_counts_.end()) {
        it = lease_counts_.emplace(key, 0).first;
      }
      it->second += delta;
      if (it->second == 0) {
        lease_counts_.erase(it);
      }
    }
  }
  quotas_.Apply(w.quota);
  if (!w.leases.empty()) {
    leases_.Update(std::move(w.leases));
  }
}

Status PgQueueStore::WriteRows(PgPool::Use& c, PgWrite& w) {
  if (Status s = NotifyWaiting(c, w); !s.ok()) {
    return s;
  }
  if (!w.inserts.empty()) {
    std::vector<std::string> ids, tenants, dests, idems, records;
    std::vector<bool> no_idem;
    std::vector<int64_t> shards, states, dues, finished;
    for (PgRow& r : w.inserts) {
      ids.push_back(std::move(r.id));
      tenants.push_back(std::move(r.tenant));
      dests.push_back(std::move(r.dest_key));
      shards.push_back(r.shard);
      states.push_back(r.state);
      dues.push_back(r.due_ms);
      finished.push_back(r.finished_ms);
      no_idem.push_back(!r.idem_key.has_value());
      idems.push_back(r.idem_key.value_or(""));
      records.push_back(std::move(r.record));
    }
    PgParams p;
    p.TextArray(ids).BytesArray(tenants).BytesArray(dests).Int64Array(shards).Int64Array(states);
    p.Int64Array(dues).Int64Array(finished).NullableBytesArray(idems, no_idem).BytesArray(records);
    auto r = Q(c,
               "INSERT INTO egress_deliveries "
               "(id, tenant, dest_key, shard, state, due_ms, finished_ms, idem_key, record) "
               "SELECT i, t, dk, s::int2, st::int2, du, f, ik, r FROM unnest($1::text[], "
               "$2::bytea[], $3::bytea[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], "
               "$8::bytea[], $9::bytea[]) AS u(i, t, dk, s, st, du, f, ik, r)",
               p);
    if (!r) {
      return r.error();
    }
  }
  if (!w.updates.empty()) {
    std::vector<std::string> ids, idems, records;
    std::vector<bool> no_idem;
    std::vector<int64_t> states, dues, finished;
    for (auto& [id, r] : w.updates) {
      ids.push_back(id);
      states.push_back(r.state);
      dues.push_back(r.due_ms);
      finished.push_back(r.finished_ms);
      no_idem.push_back(!r.idem_key.has_value());
      idems.push_back(r.idem_key.value_or(""));
      records.push_back(std::move(r.record));
    }
    PgParams p;
    p.TextArray(ids).Int64Array(states).Int64Array(dues).Int64Array(finished);
    p.NullableBytesArray(idems, no_idem).BytesArray(records);
    auto r = Q(c,
               "UPDATE egress_deliveries d SET state = u.st::int2, due_ms = u.du, "
               "finished_ms = u.f, idem_key = u.ik, record = u.r FROM unnest($1::text[], "
               "$2::int8[], $3::int8[], $4::int8[], $5::bytea[], $6::bytea[]) "
               "AS u(i, st, du, f, ik, r) WHERE d.id = u.i",
               p);
    if (!r) {
      return r.error();
    }
    if (r->affected() != static_cast<int64_t>(ids.size())) {
      // Rows were read under FOR UPDATE in this transaction: none can have gone.
      return Status::Unavailable(
          fmt::format("postgres: {} of {} delivery rows were updated", r->affected(), ids.size()));
    }
  }
  if (!w.deletes.empty()) {
    auto r = Q(c, "DELETE FROM egress_deliveries WHERE id = ANY($1::text[])",
               PgParams().TextArray(w.deletes));
    if (!r) {
      return r.error();
    }
  }
  auto idem_params = [](const std::vector<PgWrite::Idem>& v) {
    std::vector<std::string> tenants, keys, ids;
    std::vector<int64_t> finished;
    for (const PgWrite::Idem& e : v) {
      tenants.push_back(e.tenant);
      keys.push_back(e.key);
      ids.push_back(e.id);
      finished.push_back(e.finished_ms);
    }
    PgParams p;
    p.BytesArray(tenants).BytesArray(keys).TextArray(ids).Int64Array(finished);
    return p;
  };
  if (!w.idem_marks.empty()) {
    auto r = Q(c,
               "UPDATE egress_idem i SET finished_ms = NULLIF(u.f, -1) FROM unnest($1::bytea[], "
               "$2::bytea[], $3::text[], $4::int8[]) AS u(t, k, id, f) "
               "WHERE i.tenant = u.t AND i.key = u.k AND i.id = u.id",
               idem_params(w.idem_marks));
    if (!r) {
      return r.error();
    }
  }
  if (!w.idem_releases.empty()) {
    auto r = Q(c,
               "DELETE FROM egress_idem i USING unnest($1::bytea[], $2::bytea[], $3::text[], "
               "$4::int8[]) AS u(t, k, id, f) "
               "WHERE i.tenant = u.t AND i.key = u.k AND i.id = u.id",
               idem_params(w.idem_releases));
    if (!r) {
      return r.error();
    }
  }
  return WriteCounters(c, w);
}

Status PgQueueStore::WriteCounters(PgPool::Use& c, const PgWrite& w) {
  // In key order, so two transactions lock shared counter rows in the same order (no deadlock).
  std::map<std::string_view, int64_t> sorted;
  for (const CounterDeltas* d : {&w.counters, &w.quota}) {
    for (const auto& [key, delta] : d->deltas()) {
      if (delta != 0) {
        sorted[key] += delta;
      }
    }
  }
  if (sorted.empty()) {
    return Status::Ok();
  }
  std::vector<std::string> keys;
  std::vector<int64_t> deltas;
  for (const auto& [key, delta] : sorted) {
    keys.emplace_back(key);
    deltas.push_back(delta);
  }
  const int slot = static_cast<int>((slot_base_ + c.index()) % kPgCounterSlots);
  auto r = Q(c,
             "INSERT INTO egress_counters (key, slot, n) SELECT k, $2::int2, d "
             "FROM unnest($1::bytea[], $3::int8[]) WITH ORDINALITY AS u(k, d, o) ORDER BY o "
             "ON CONFLICT (key, slot) DO UPDATE SET n = egress_counters.n + excluded.n",
             PgParams().BytesArray(keys).Int32(slot).Int64Array(deltas));
  return r ? Status::Ok() : r.error();
}

Status PgQueueStore::NotifyWaiting(PgPool::Use& c, const PgWrite& w) {
  if (!shards_) {
    return Status::Ok();
  }
  // "<shard>/<id>" of rows this write makes waiting in shards another node dispatches, a payload
  // of at most ~7,000 bytes each (NOTIFY takes up to 8,000): sent when the transaction commits.
  std::vector<std::string> payloads;
  auto add = [&](const PgRow& r) {
    const bool waiting = r.state == static_cast<int64_t>(DeliveryState::kQueued) ||
                         r.state == static_cast<int64_t>(DeliveryState::kDeferred);
    if (!waiting || shards_->MayDispatch(static_cast<int>(r.shard))) {
      return;
    }
    const std::string entry = fmt::format("{}/{}", r.shard, r.id);
    if (payloads.empty() || payloads.back().size() + entry.size() + 1 > 7000) {
      payloads.emplace_back();
    } else {
      payloads.back().push_back(',');
    }
    payloads.back().append(entry);
  };
  for (const PgRow& r : w.inserts) {
    add(r);
  }
  for (const auto& [id, r] : w.updates) {
    add(r);
  }
  if (payloads.empty()) {
    return Status::Ok();
  }
  auto r = Q(c, "SELECT pg_notify('egress_wake', p) FROM unnest($1::text[]) AS p",
             PgParams().TextArray(payloads));
  return r ? Status::Ok() : r.error();
}

std::mutex& PgQueueStore::IdStripe(std::string_view id) {
  return id_stripes_[std::hash<std::string_view>{}(id) % kStripes];
}

uint64_t PgQueueStore::Stage(PgWrite& w, const Delivery* before, const Delivery* after,
                             uint64_t before_bytes) {
  const Delivery& any = after != nullptr ? *after : *before;
  const std::string stored_destination = seal_.Stored(any.destination);
  const std::string dest =
      DestinationKeyOf(any.platform, any.tenant, any.credential, stored_destination);
  AddCounterMoves(before, after, dest, w.counters);
  AddQuotaMoves(before, after, w.quota);
  uint64_t after_bytes = 0;
  if (after != nullptr) {
    PgRow row{.id = after->id,
              .tenant = after->tenant,
              .dest_key = dest,
              .shard = PgShardOf(dest),
              .state = static_cast<int64_t>(after->state),
              // Queued ones are due when queued (LeaseDue checks the time of both).
              .due_ms = after->next_attempt_ms,
              .finished_ms = after->finished_ms,
              .idem_key = after->idempotency_key.empty()
                              ? std::nullopt
                              : std::optional<std::string>(after->idempotency_key),
              .record = EncodeDelivery(*after, stored_destination)};
    after_bytes = after->id.size() + row.record.size();
    // The idempotency key's expiry follows the delivery's finish (while the key names it).
    if (!after->idempotency_key.empty()) {
      const bool was_done = before != nullptr && IsTerminal(before->state);
      const bool done = IsTerminal(after->state);
      if ((done && (!was_done || before->finished_ms != after->finished_ms)) ||
          (!done && was_done)) {
        w.idem_marks.push_back(
            {after->tenant, after->idempotency_key, after->id, done ? after->finished_ms : -1});
      }
    }
    if (before == nullptr) {
      w.inserts.push_back(std::move(row));
    } else {
      w.updates[after->id] = std::move(row);
    }
  } else {
    // The idempotency entry is the caller's (it may name a newer delivery).
    w.updates.erase(before->id);
    w.deletes.push_back(before->id);
  }
  if (after_bytes != before_bytes) {
    w.counters.Add(StoredBytesKey(any.tenant),
                   static_cast<int64_t>(after_bytes) - static_cast<int64_t>(before_bytes));
  }
  return after_bytes;
}

void PgQueueStore::StageInMemory(PgWrite& w, const Delivery& from, const Delivery& to) const {
  AddCounterMoves(
      &from, &to,
      DestinationKeyOf(to.platform, to.tenant, to.credential, seal_.Stored(to.destination)),
      w.memory_only);
}

}  // namespace egress::storage
