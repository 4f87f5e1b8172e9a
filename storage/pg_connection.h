#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dispatcher/base/result.h"

// libpq's handles, declared as <libpq-fe.h> does, so that only storage/pg_connection.cc includes
// it (and its include path stays there).
struct pg_conn;
struct pg_result;

namespace egress::storage {

// The parameters of one statement, all sent in binary with their type named, so no value is ever
// quoted into SQL. Arrays are one-dimensional (PostgreSQL's binary array format), for the
// multi-row statements (`unnest($1::bytea[], ...)`) that write a batch in one round trip.
class PgParams {
 public:
  PgParams& Bytes(std::string_view v);  // bytea
  PgParams& Text(std::string_view v);   // text: valid UTF-8 without NUL (ids, fixed names)
  PgParams& Int64(int64_t v);           // int8
  PgParams& Int32(int32_t v);           // int4
  PgParams& BytesArray(const std::vector<std::string>& v);  // bytea[]
  PgParams& TextArray(const std::vector<std::string>& v);   // text[]
  PgParams& Int64Array(const std::vector<int64_t>& v);      // int8[]
  // bytea[] whose NULL elements are the positions where `null` is true.
  PgParams& NullableBytesArray(const std::vector<std::string>& v, const std::vector<bool>& null);

  size_t size() const { return values_.size(); }
  // For PQexecParams; valid while this object lives unchanged.
  std::vector<const char*> Values() const;
  const std::vector<int>& lengths() const { return lengths_; }
  const std::vector<unsigned int>& types() const { return types_; }

 private:
  PgParams& Add(unsigned int type, std::string bytes);

  std::vector<std::string> values_;
  std::vector<int> lengths_;
  std::vector<unsigned int> types_;
};

// One statement's rows, read in binary. Column accessors take the column's position in the
// SELECT list; a type other than the accessor's is Corruption (checked once per column by
// CheckTypes, so row reads stay cheap).
class PgResult {
 public:
  explicit PgResult(pg_result* r);
  ~PgResult();
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&&) = delete;
  PgResult(const PgResult&) = delete;

  int rows() const;
  // Rows a command (INSERT, UPDATE, DELETE) touched.
  int64_t affected() const;
  bool IsNull(int row, int col) const;
  std::string_view Bytes(int row, int col) const;  // bytea or text
  // int2, int4 or int8 (numeric results of sum() must be cast to int8 in SQL).
  int64_t Int(int row, int col) const;
  // Corruption unless column `col` exists and is one of the integer types.
  Status CheckInt(int col) const;

 private:
  pg_result* r_;
};

// One libpq connection. Not thread-safe: PgPool hands each to one thread at a time.
// Error mapping (FromPg in the .cc): a lost connection, a server shutting down or starting,
// too many connections, a serialization failure or deadlock are Unavailable (transient); a
// unique violation is AlreadyExists; data corruption reported by the server is Corruption;
// anything else IoError. Messages carry the server's text, never the connection string.
class PgConnection {
 public:
  // Connects with `conninfo` (a libpq URI or key=value string, not copied into any message) and
  // `password` when it is not empty (over any password the conninfo holds: a password kept by
  // reference, [store] password_file or password_env), and sets synchronous_commit to on for the
  // session, so a commit returns only once durable however the database is configured, and
  // idle_in_transaction_session_timeout to 3 s (a stopped process's open transaction must not
  // hold its locks for long).
  // Unavailable when the server cannot be reached.
  static Result<std::unique_ptr<PgConnection>> Connect(const std::string& conninfo,
                                                       const std::string& password = {});
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs one statement with binary parameters and binary results. The first run of a statement
  // text (with its parameter types) on this connection prepares it under a name of its own, and
  // later runs execute that: the server parses and plans it once per connection, not per run
  // (the statements are few and fixed; see kMaxPrepared).
  Result<PgResult> Exec(std::string_view sql, const PgParams& params = PgParams());
  // Runs SQL without parameters (one or more statements; DDL, BEGIN, COMMIT), text results.
  Status Run(std::string_view sql);
  // False once the connection was lost; only a new connection helps then.
  bool ok() const;

  // Waits up to `timeout_ms` for notifications of the channels this session LISTENs to and
  // returns their payloads (none when the time passed). Unavailable once the connection is lost.
  Result<std::vector<std::string>> WaitForNotifications(int timeout_ms);

 private:
  // Statements prepared per connection at most; past it a new text runs unprepared (a bound on
  // the server's memory should a caller ever build statement texts from values).
  static constexpr size_t kMaxPrepared = 128;

  explicit PgConnection(pg_conn* conn) : conn_(conn) {}
  Status ErrorOf(pg_result* r, std::string_view what) const;
  // The prepared statement's name for `text` with `params`' types, preparing it on first use;
  // empty when it is not to be prepared (kMaxPrepared reached). Errors are the server's.
  Result<std::string> Prepared(const std::string& text, const PgParams& params);

  pg_conn* conn_;
  // Statement text and parameter types -> prepared statement name ("egress_<n>").
  std::unordered_map<std::string, std::string> prepared_;
};

// Removes the password from a libpq URI or key=value string, for logs and messages:
// "postgresql://egress:secret@db/x" -> "postgresql://egress@db/x", "password=x" -> "password=*".
std::string RedactConninfo(std::string_view conninfo);

}  // namespace egress::storage
