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
// refused at start, as a second process opening one RocksDB store is. The lock goes with its
// connection: a node killed or cut off from the database loses it (the server notices the
// connection's end), and another node may then start on the store. Not thread-safe: one owner.
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
