#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dispatcher/base/result.h"
#include "storage/pg_connection.h"
#include "storage/queue_store.h"

namespace egress::storage {

// A fixed number of PostgreSQL connections shared by the threads of one store. A thread takes
// one (waiting while all are out), uses it alone and gives it back by destroying the Use.
// The pool follows its connections' health: a call that found its connection lost marks the
// pool unhealthy (Health), and Recover reconnects every lost connection. Thread-safe.
class PgPool {
 public:
  // A connection lent to one caller, with its index in the pool (0 .. size - 1): each holds a
  // counter slot of its own (pg_schema.h), so this node's transactions never wait on each
  // other's counter rows.
  class Use {
   public:
    Use(PgPool* pool, size_t index) : pool_(pool), index_(index) {}
    ~Use();
    Use(Use&& other) noexcept : pool_(other.pool_), index_(other.index_) { other.pool_ = nullptr; }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    Use& operator=(Use&&) = delete;

    PgConnection& operator*() const;
    PgConnection* operator->() const { return &**this; }
    size_t index() const { return index_; }

   private:
    PgPool* pool_;
    size_t index_;
  };

  // Opens `size` connections (at least 1) with `conninfo` and `password` (a secret; empty: the
  // conninfo's own, if any). Errors as PgConnection::Connect.
  static Result<std::unique_ptr<PgPool>> Open(std::string conninfo, size_t size,
                                              std::string password = {});

  // A free connection; Unavailable at once when it is lost (the caller's error then says so
  // and Health turns unhealthy until Recover).
  Result<Use> Take();
  // Marks the pool unhealthy when `s` is Unavailable and a connection was lost: call with the
  // status of every statement. Returns `s`.
  Status Note(const Status& s, const PgConnection& c);
  StoreHealth Health() const;
  // Reconnects every lost connection; Ok (and healthy) once all are connected.
  Status Recover();
  size_t size() const { return conns_.size(); }

 private:
  PgPool(std::string conninfo, std::string password)
      : conninfo_(std::move(conninfo)), password_(std::move(password)) {}
  void Give(size_t index);

  const std::string conninfo_;
  const std::string password_;  // a secret
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<PgConnection>> conns_;  // null: lost and not yet reconnected
  std::vector<bool> busy_;
  StoreHealth health_;
};

}  // namespace egress::storage
