#pragma once

#include <cstdint>
#include <string_view>

#include "dispatcher/base/status.h"
#include "storage/pg_connection.h"

namespace egress::storage {

// The PostgreSQL store's tables (docs/storage.md, "PostgreSQL"). Version 1:
//
//   egress_schema      (one row) version
//   egress_deliveries  id text PK, tenant bytea, dest_key bytea (the destination key as stored:
//                      sealed when it holds a secret), shard int2, state int2, due_ms int8,
//                      finished_ms int8, idem_key bytea (NULL: none), record bytea (the
//                      delivery_codec bytes, the destination as stored). Partial indexes:
//                      (dest_key, id) of non-terminal rows (PendingFor, ListDestinations),
//                      (state, id) (List, LeaseDue of queued), (due_ms, id) of deferred rows
//                      (LeaseDue), (state, finished_ms, id) of finished rows (retention);
//                      (shard, state) until version 3, which drops it (nothing read by it).
//   egress_idem        (tenant, key) PK -> id; finished_ms set while it names a finished
//                      delivery (NULL while live): the idempotency key's expiry index.
//   egress_counters    (key, slot) PK -> n: the exact counters (index_keys.h keys: count/,
//                      backlog/, destcount/, storedbytes/, quota/), one row per key and counter
//                      slot, summed on read. Moved in the same transaction as the records.
//   egress_settings    key bytea PK -> value bytea (sealed ones as setting_seal.h writes them).
//   egress_meta        key text PK -> value bytea (destinations_sealed).
// Version 2 adds the shard leases (pg_shard_leases.h):
//   egress_shards      shard int2 PK (a row per shard, 0 to kPgShards - 1) -> owner text (the
//                      node id holding it; NULL: never held), epoch int8 (bumped by each claim),
//                      expires_at timestamptz (the database's clock).
//   egress_nodes       node_id text PK -> expires_at timestamptz (its heartbeat), started_at.
// Version 3 drops the (shard, state) index of egress_deliveries.
inline constexpr int kPgSchemaVersion = 3;

// Counter rows per key: a transaction adds its deltas to the slot of its pool connection
// (offset per store), so concurrent writers rarely wait on one counter row. Reads sum the slots.
inline constexpr int kPgCounterSlots = 64;

// Destinations hash into this many shards (PgShardOf), the unit of ownership.
inline constexpr int kPgShards = 256;

// The shard of a destination key as stored: FNV-1a (64-bit) of its bytes, mod kPgShards.
// Stable: the same on every node, build and platform.
int PgShardOf(std::string_view stored_destination_key);

// Creates the tables on an empty database, or checks (and migrates, once there are older
// versions) what is there, under a session advisory lock so that nodes opening together do it
// once. FailedPrecondition for a schema newer than this build's; errors of the connection as
// PgConnection's.
Status EnsurePgSchema(PgConnection& c);

}  // namespace egress::storage
