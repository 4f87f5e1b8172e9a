// The PgQueueStore's removals and repairs: the retention purge, Purge of one record, and
// MoveCorruptToDead.

#include <fmt/format.h>

#include "storage/counter_moves.h"
#include "storage/delivery_codec.h"
#include "storage/delivery_id.h"
#include "storage/index_keys.h"
#include "storage/pg_queue_store_internal.h"
#include "storage/store_steps.h"

namespace egress::storage {
Result<uint64_t> PgQueueStore::PurgeClass(PgPool::Use& c, PgWrite& w, DeliveryState state,
                                          int64_t cutoff_ms, size_t max, bool& more) {
  // One statement: the oldest finished rows of the class go with the idempotency entries that
  // still name them; the WHERE is checked again on each row it deletes, so a record replayed
  // meanwhile (a dead one) stays. Finished records are never leased: no stripe is needed.
  auto r = Q(c,
             "WITH gone AS (DELETE FROM egress_deliveries WHERE id IN (SELECT id FROM "
             "egress_deliveries WHERE state = $1 AND finished_ms < $2 ORDER BY finished_ms, id "
             "LIMIT $3) AND state = $1 AND finished_ms < $2 RETURNING id, tenant, "
             "(octet_length(id) + octet_length(record))::int8 AS bytes), "
             "idem AS (DELETE FROM egress_idem i USING gone WHERE i.id = gone.id) "
             "SELECT id, tenant, bytes FROM gone",
             PgParams()
                 .Int32(static_cast<int32_t>(state))
                 .Int64(cutoff_ms)
                 .Int64(static_cast<int64_t>(max)));
  if (!r) {
    return r.error();
  }
  for (int i = 0; i < r->rows(); ++i) {
    // A removal moves the count of its state and its tenant's stored bytes only (finished
    // records hold no backlog, destination count or quota move).
    Delivery gone{.id = std::string(r->Bytes(i, 0)), .tenant = std::string(r->Bytes(i, 1))};
    gone.state = state;
    AddCounterMoves(&gone, nullptr, "", w.counters);
    w.counters.Add(StoredBytesKey(gone.tenant), -r->Int(i, 2));
  }
  if (static_cast<size_t>(r->rows()) == max) {
    auto next =
        Q(c, "SELECT 1 FROM egress_deliveries WHERE state = $1 AND finished_ms < $2 LIMIT 1",
          PgParams().Int32(static_cast<int32_t>(state)).Int64(cutoff_ms));
    if (!next) {
      return next.error();
    }
    more = more || next->rows() > 0;
  }
  return static_cast<uint64_t>(r->rows());
}

Result<PurgeCounts> PgQueueStore::PurgeExpired(const RetentionPolicy& policy, int64_t now_ms,
                                               size_t max) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  if (max == 0) {
    return Status::InvalidArgument("purge: max must be at least 1");
  }
  std::lock_guard<std::mutex> purge(purge_mu_);
  auto c = Take();
  if (!c) {
    return c.error();
  }
  PurgeCounts removed;
  PgWrite w;
  Status s = Transact(*c, w, [&]() -> Status {
    size_t budget = max;
    for (DeliveryState state : kRetainedClasses) {
      const int64_t age = RetentionAgeOf(policy, state);
      if (age <= 0) {
        continue;
      }
      if (budget == 0) {
        // Stopped by `max`: more only when something of this class is due.
        auto next = Q(*c,
                      "SELECT 1 FROM egress_deliveries WHERE state = $1 AND finished_ms < $2 "
                      "LIMIT 1",
                      PgParams().Int32(static_cast<int32_t>(state)).Int64(now_ms - age));
        if (!next) {
          return next.error();
        }
        removed.more = removed.more || next->rows() > 0;
        continue;
      }
      Result<uint64_t> n = PurgeClass(*c, w, state, now_ms - age, budget, removed.more);
      if (!n) {
        return n.error();
      }
      PurgedCountOf(removed, state) = *n;
      budget -= *n;
    }
    if (policy.idempotency_ms > 0) {
      // Keys of finished deliveries whose record stays (a purged record took its key along).
      auto keys =
          Q(*c,
            "WITH rel AS (DELETE FROM egress_idem WHERE (tenant, key) IN (SELECT tenant, "
            "key FROM egress_idem WHERE finished_ms IS NOT NULL AND finished_ms < $1 "
            "ORDER BY finished_ms LIMIT $2) AND finished_ms < $1 RETURNING 1) "
            "SELECT count(*)::int8 FROM rel",
            PgParams().Int64(now_ms - policy.idempotency_ms).Int64(static_cast<int64_t>(budget)));
      if (!keys) {
        return keys.error();
      }
      removed.idempotency_keys = static_cast<uint64_t>(keys->Int(0, 0));
      if (removed.idempotency_keys == budget) {  // also when the records took the whole budget
        auto next = Q(*c,
                      "SELECT 1 FROM egress_idem WHERE finished_ms IS NOT NULL AND "
                      "finished_ms < $1 LIMIT 1",
                      PgParams().Int64(now_ms - policy.idempotency_ms));
        if (!next) {
          return next.error();
        }
        removed.more = removed.more || next->rows() > 0;
      }
    }
    if (removed.idempotency_keys > 0) {
      w.direct = true;  // keys released: rows changed, though no counter moved
    }
    return WriteCounters(*c, w);
  });
  if (!s.ok()) {
    return s;
  }
  Result<bool> more = PruneCounters(*c, now_ms, max);
  if (!more) {
    return more.error();
  }
  removed.more = removed.more || *more;
  return removed;
}

Result<bool> PgQueueStore::PruneCounters(PgPool::Use& c, int64_t now_ms, size_t max) {
  // Each statement is a transaction of its own, outside the purge's: it locks its rows in key
  // order and passes over any a writer holds (SKIP LOCKED), so it never waits and can never be
  // part of a deadlock. Inside the purge's transaction these deletes took their locks in the
  // table's order, before the purge's own counter rows, while writers take theirs in key order:
  // a writer holding one zero row and waiting for another could meet the purge holding the
  // second and waiting for the first. A row locked (or brought back above 0) meanwhile is
  // simply left for the next purge.
  // Quota slices that stopped counting an hour ago (no write touches them any more).
  auto pruned =
      Q(c,
        "DELETE FROM egress_counters WHERE ctid = ANY(ARRAY(SELECT ctid FROM egress_counters "
        "WHERE key >= 'quota/'::bytea AND key < 'quota0'::bytea AND length(key) >= 8 AND "
        "('x' || encode(substring(key from length(key) - 7), 'hex'))::bit(64)::int8 <= $1 "
        "ORDER BY key, slot LIMIT $2 FOR UPDATE SKIP LOCKED))",
        PgParams().Int64(now_ms - kQuotaPruneGraceMs).Int64(static_cast<int64_t>(max)));
  if (!pruned) {
    return pruned.error();
  }
  // Counter rows at 0 of destinations gone quiet: the lock's recheck keeps a row a writer moved
  // off 0 since the statement began.
  auto zero = Q(c,
                "DELETE FROM egress_counters WHERE ctid = ANY(ARRAY(SELECT ctid FROM "
                "egress_counters WHERE key >= 'destcount/'::bytea AND key < 'destcount0'::bytea "
                "AND n = 0 ORDER BY key, slot LIMIT $1 FOR UPDATE SKIP LOCKED))",
                PgParams().Int64(static_cast<int64_t>(max)));
  if (!zero) {
    return zero.error();
  }
  commits_ += (pruned->affected() > 0 ? 1 : 0) + (zero->affected() > 0 ? 1 : 0);
  return pruned->affected() == static_cast<int64_t>(max);
}

Status PgQueueStore::Purge(const std::string& id) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::lock_guard<std::mutex> stripe(IdStripe(id));
  auto c = Take();
  if (!c) {
    return c.error();
  }
  PgWrite w;
  return Transact(*c, w, [&]() -> Status {
    if (leases_.Contains(id)) {
      return Status::FailedPrecondition(
          fmt::format("delivery {} is in_flight; only finished deliveries can be purged", id));
    }
    auto r = Q(*c,
               "SELECT (octet_length(id) + octet_length(record))::int8, record "
               "FROM egress_deliveries WHERE id = $1 FOR UPDATE",
               PgParams().Text(id));
    if (!r) {
      return r.error();
    }
    if (r->rows() == 0) {
      return Status::NotFound(fmt::format("delivery {} not found", id));
    }
    Result<Delivery> d = Decode(r->Bytes(0, 1));
    if (!d) {
      return Status::Corruption(fmt::format("delivery {}: {}", id, d.error().message()));
    }
    if (!IsTerminal(d->state)) {
      return Status::FailedPrecondition(fmt::format(
          "delivery {} is {}; only finished deliveries can be purged", id, StateName(d->state)));
    }
    if (!d->idempotency_key.empty()) {
      w.idem_releases.push_back({d->tenant, d->idempotency_key, d->id, -1});
    }
    Stage(w, &*d, nullptr, static_cast<uint64_t>(r->Int(0, 0)));
    return WriteRows(*c, w);
  });
}

Result<Delivery> PgQueueStore::MoveCorruptToDead(const std::string& id,
                                                 const std::string& destination_key,
                                                 int64_t now_ms) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  DestinationParts parts;  // as given (opened)
  DestinationParts stored_parts;
  const std::string stored_key = seal_.StoredKey(destination_key);
  if (!SplitDestinationKey(destination_key, parts) ||
      !SplitDestinationKey(stored_key, stored_parts)) {
    return Status::InvalidArgument("not a destination key");
  }
  std::lock_guard<std::mutex> stripe(IdStripe(id));
  if (leases_.Contains(id)) {
    return Status::FailedPrecondition(fmt::format("delivery {} is in flight", id));
  }
  auto c = Take();
  if (!c) {
    return c.error();
  }
  Delivery after;
  PgWrite w;
  Status s = Transact(*c, w, [&]() -> Status {
    auto r = Q(*c,
               "SELECT state::int8, due_ms, record FROM egress_deliveries WHERE id = $1 AND "
               "dest_key = $2 AND state IN (1, 2, 3) FOR UPDATE",
               PgParams().Text(id).Bytes(stored_key));
    if (!r) {
      return r.error();
    }
    if (r->rows() == 0) {
      return Status::NotFound(fmt::format("destination holds no delivery {}", id));
    }
    std::string bytes(r->Bytes(0, 2));
    std::string problem;
    Result<Delivery> d = DecodeDelivery(bytes);
    if (!d) {
      problem = d.error().message();
    } else if (d->id != id) {
      problem = "record holds another id";
    } else if (d->platform != stored_parts.platform || d->tenant != stored_parts.tenant ||
               d->credential != stored_parts.credential ||
               d->destination != stored_parts.destination) {
      problem = "record belongs to another destination";
    } else if (Result<std::string> opened = seal_.Open(d->destination); !opened) {
      problem = opened.error().message();
    } else {
      return Status::FailedPrecondition(
          fmt::format("delivery {} reads as a delivery of its destination; nothing to repair", id));
    }
    // Its state and due time from the row's columns (the record cannot say).
    Delivery before{.id = id,
                    .tenant = parts.tenant,
                    .platform = parts.platform,
                    .destination = parts.destination,
                    .credential = parts.credential};
    before.state = static_cast<DeliveryState>(r->Int(0, 0));
    before.next_attempt_ms = r->Int(0, 1);
    // Counted as found: a record damaged at rest was counted at the size it was written with.
    const uint64_t found_bytes = id.size() + bytes.size();
    after = before;
    after.payload = std::move(bytes);
    const int64_t minted_ms = DeliveryIdMillis(id);
    after.created_ms = minted_ms >= 0 ? minted_ms : now_ms;
    after.state = DeliveryState::kDead;
    after.reason = "corrupt_record: " + problem;
    after.updated_ms = now_ms;
    after.finished_ms = now_ms;
    after.next_attempt_ms = 0;
    Stage(w, &before, &after, found_bytes);
    return WriteRows(*c, w);
  });
  if (!s.ok()) {
    return s;
  }
  return after;
}

}  // namespace egress::storage
