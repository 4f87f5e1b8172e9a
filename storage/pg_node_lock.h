#pragma once

#include <memory>
#include <string>

#include "dispatcher/base/result.h"
#include "storage/pg_connection.h"

namespace egress::storage {

// The PostgreSQL store's one serving node, until several nodes share it by shard (issue 29:
// destinations owned by fenced shard leases, not built yet): a session advisory lock held on a
// connection of its own for the node's life. Two nodes dispatching from one store would each
// lease and send the same deliveries (a lease lives in its node's memory), so a second node is
// refused (Busy) and may wait as a standby. The lock goes with its connection: a node killed
// loses it at once (its socket closes), one cut off without a close in about 8 s (the server's
// keepalive probes on this connection), and another node may then take it. Not fenced: a node cut
// off may still send what it holds in flight until its own Check fails (duplicates, at least
// once), which shard leases with epochs checked in every write are to close. Not thread-safe.
class PgNodeLock {
 public:
  // Takes the lock on a new connection (`conninfo`, `password` as PgConnection::Connect). Busy
  // when another node holds it; Unavailable when the server cannot be reached.
  static Result<std::unique_ptr<PgNodeLock>> Acquire(const std::string& conninfo,
                                                     const std::string& password);

  // Whether the lock is still held: a round trip on its connection that checks the lock among
  // the session's own (pg_locks). An error (Unavailable: the connection is lost, so is the lock;
  // FailedPrecondition: the session no longer holds it) means this node must stop serving the
  // store. Blocking: call it from the storage pool.
  Status Check();

 private:
  explicit PgNodeLock(std::unique_ptr<PgConnection> conn) : conn_(std::move(conn)) {}

  std::unique_ptr<PgConnection> conn_;
};

}  // namespace egress::storage
