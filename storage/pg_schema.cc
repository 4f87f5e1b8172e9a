#include "storage/pg_schema.h"

#include <fmt/format.h>

namespace egress::storage {
namespace {

// pg_advisory_lock's key: "egress" in ASCII, so it will not meet another application's by chance.
constexpr int64_t kSchemaLockKey = 0x65677265737300;

constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE egress_schema (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  version integer NOT NULL
);
CREATE TABLE egress_deliveries (
  id text COLLATE "C" PRIMARY KEY,
  tenant bytea NOT NULL,
  dest_key bytea NOT NULL,
  shard smallint NOT NULL,
  state smallint NOT NULL,
  due_ms bigint NOT NULL,
  finished_ms bigint NOT NULL,
  idem_key bytea,
  record bytea NOT NULL
);
CREATE INDEX egress_deliveries_dest ON egress_deliveries (dest_key, id) WHERE state IN (1, 2, 3);
CREATE INDEX egress_deliveries_state ON egress_deliveries (state, id);
CREATE INDEX egress_deliveries_due ON egress_deliveries (due_ms, id) WHERE state = 3;
CREATE INDEX egress_deliveries_done ON egress_deliveries (state, finished_ms, id)
  WHERE state IN (4, 5, 6);
CREATE INDEX egress_deliveries_shard ON egress_deliveries (shard, state);
CREATE TABLE egress_idem (
  tenant bytea NOT NULL,
  key bytea NOT NULL,
  id text COLLATE "C" NOT NULL,
  finished_ms bigint,
  PRIMARY KEY (tenant, key)
);
CREATE INDEX egress_idem_id ON egress_idem (id);
CREATE INDEX egress_idem_expiry ON egress_idem (finished_ms) WHERE finished_ms IS NOT NULL;
CREATE TABLE egress_counters (
  key bytea NOT NULL,
  slot smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (key, slot)
);
CREATE TABLE egress_settings (key bytea PRIMARY KEY, value bytea NOT NULL);
CREATE TABLE egress_meta (key text PRIMARY KEY, value bytea NOT NULL);
INSERT INTO egress_schema (version) VALUES (1);
)sql";

// Version 2: shard leases (storage/pg_shard_leases.h). One row per shard, made here, so a claim
// is an UPDATE that a writer's FOR KEY SHARE of the row fences; the nodes' heartbeats beside.
constexpr std::string_view kSchemaV2 = R"sql(
CREATE TABLE egress_shards (
  shard smallint PRIMARY KEY,
  owner text COLLATE "C",
  epoch bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO egress_shards (shard) SELECT generate_series(0, 255);
CREATE TABLE egress_nodes (
  node_id text COLLATE "C" PRIMARY KEY,
  expires_at timestamptz NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now()
);
UPDATE egress_schema SET version = 2;
)sql";

// Version 3: no (shard, state) index. No statement reads deliveries by shard (a shard's work is
// found by destination), and every insert and state change paid for it: one B-tree insert of
// about 13 per delivery in the throughput run.
constexpr std::string_view kSchemaV3 = R"sql(
DROP INDEX IF EXISTS egress_deliveries_shard;
UPDATE egress_schema SET version = 3;
)sql";

Status Migrate(PgConnection& c) {
  auto exists = c.Exec("SELECT (to_regclass('egress_schema') IS NOT NULL)");
  if (!exists) {
    return exists.error();
  }
  // Booleans come back as one byte in binary.
  if (exists->Bytes(0, 0) != std::string_view("\x01", 1)) {
    return c.Run(fmt::format("BEGIN; {} {} {} COMMIT;", kSchemaV1, kSchemaV2, kSchemaV3));
  }
  auto version = c.Exec("SELECT version::int8 FROM egress_schema");
  if (!version) {
    return version.error();
  }
  if (version->rows() != 1) {
    return Status::Corruption("egress_schema holds no version row");
  }
  const int64_t v = version->Int(0, 0);
  if (v > kPgSchemaVersion) {
    return Status::FailedPrecondition(
        fmt::format("the database's relay-egress schema is version {}, this build knows up to {}",
                    v, kPgSchemaVersion));
  }
  // One version at a time, each in one transaction with its version row.
  if (v < 2) {
    if (Status s = c.Run(fmt::format("BEGIN; {} COMMIT;", kSchemaV2)); !s.ok()) {
      return s;
    }
  }
  if (v < 3) {
    if (Status s = c.Run(fmt::format("BEGIN; {} COMMIT;", kSchemaV3)); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace

int PgShardOf(std::string_view stored_destination_key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : stored_destination_key) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % kPgShards);
}

Status EnsurePgSchema(PgConnection& c) {
  if (Status s = c.Run(fmt::format("SELECT pg_advisory_lock({})", kSchemaLockKey)); !s.ok()) {
    return s;
  }
  Status s = Migrate(c);
  // The lock is the session's: released here, or with the connection when it was lost.
  Status unlock = c.Run(fmt::format("SELECT pg_advisory_unlock({})", kSchemaLockKey));
  if (!s.ok()) {
    return s;
  }
  return unlock;
}

}  // namespace egress::storage
