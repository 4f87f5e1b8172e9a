#include "storage/pg_node_lock.h"

namespace egress::storage {
namespace {

// The advisory lock's key: "relay-eg" as a big-endian 64-bit integer, the same on every node of
// every version (a store's tables live in their own database, so one key per database is enough).
constexpr int64_t kNodeLockKey = 0x72656c61792d6567;

}  // namespace

Result<std::unique_ptr<PgNodeLock>> PgNodeLock::Acquire(const std::string& conninfo,
                                                        const std::string& password) {
  auto conn = PgConnection::Connect(conninfo, password);
  if (!conn) {
    return conn.error();
  }
  auto taken =
      (*conn)->Exec("SELECT pg_try_advisory_lock($1)::int4", PgParams().Int64(kNodeLockKey));
  if (!taken) {
    return taken.error();
  }
  if (Status s = taken->CheckInt(0); !s.ok()) {
    return s;
  }
  if (taken->rows() != 1 || taken->Int(0, 0) != 1) {
    return Status::Busy(
        "postgres: another node serves this store (its node lock is held); several nodes on one "
        "store need shard ownership, which this version does not have");
  }
  // The server probes this connection after 5 s of silence, every second, 3 times: a node cut
  // off without its connection being closed (a dead machine, a partition) gives the lock up in
  // about 8 s, not after the kernel's default of two hours. (Ignored over a Unix socket.)
  if (Status s = (*conn)->Run("SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 1; "
                              "SET tcp_keepalives_count = 3");
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<PgNodeLock>(new PgNodeLock(std::move(*conn)));
}

Status PgNodeLock::Check() {
  if (!conn_->ok()) {
    return Status::Unavailable("postgres: the node lock's connection is lost");
  }
  // An advisory lock on a bigint key shows in pg_locks as classid = high 32 bits, objid = low
  // 32 bits, objsubid = 1.
  auto held = conn_->Exec(
      "SELECT count(*)::int4 FROM pg_locks WHERE locktype = 'advisory' AND granted "
      "AND pid = pg_backend_pid() AND objsubid = 1 "
      "AND classid::int8 = ($1 >> 32) AND objid::int8 = ($1 & 4294967295)",
      PgParams().Int64(kNodeLockKey));
  if (!held) {
    return held.error();
  }
  if (Status s = held->CheckInt(0); !s.ok()) {
    return s;
  }
  if (held->rows() != 1 || held->Int(0, 0) != 1) {
    return Status::FailedPrecondition("postgres: this node no longer holds the store's node lock");
  }
  return Status::Ok();
}

}  // namespace egress::storage
