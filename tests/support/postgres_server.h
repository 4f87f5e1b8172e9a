#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace egress {

// Debian's PostgreSQL 15 for tests: initdb into a temp dir, then `postgres` on 127.0.0.1 on a
// free port, with no Unix socket, trust authentication for the user "egress", and fsync off
// (synchronous_commit stays on: a commit still waits for its WAL write, only the disk flush is
// skipped). Run as root (CI), initdb and the server run as "nobody" (PostgreSQL refuses root),
// the temp dir handed to that user. Stop() kills the server (SIGKILL: an outage, not a
// shutdown); Start() brings it back on the same port with its data. The destructor stops it.
// Starting costs 1-2 s: share one per test binary (Shared()) and give each test its own
// database (CreateDatabase).
class PostgresServer {
 public:
  // The directory holding initdb and postgres, or "" when PostgreSQL 15 is not installed
  // (tests then skip: apt-get install postgresql-15).
  static std::string BinDir();
  // One server for the whole test binary, started on first use and stopped at exit. Check
  // error() before use.
  static PostgresServer& Shared();

  // A new database on the shared server, for one test's SetUp:
  //   TestDatabase db = PostgresServer::FreshDatabase();
  //   if (db.not_installed) GTEST_SKIP() << kPostgresNotInstalled;
  //   ASSERT_TRUE(db.error.empty()) << db.error;
  struct TestDatabase {
    std::string url;             // set when it was made
    bool not_installed = false;  // PostgreSQL 15 is missing: the test skips
    std::string error;           // why the server or the database could not be made
  };
  static TestDatabase FreshDatabase();
  static constexpr const char* kNotInstalled =
      "PostgreSQL 15 is not installed (apt-get install postgresql-15)";

  // `fsync`: flush the WAL on commit, as a production server does (for measurements).
  explicit PostgresServer(bool fsync = false);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // 0 when it did not start (error() says why).
  int port() const { return port_; }
  const std::string& error() const { return error_; }
  // "postgresql://egress@127.0.0.1:PORT/<database>".
  std::string Url(const std::string& database = "postgres") const;

  // Starts it (the first time: initdb, a free port); false with error() when it failed.
  bool Start();
  // Kills it with SIGKILL, and waits until its processes are gone.
  void Stop();
  // A new empty database with a unique name; "" with error() when it failed.
  std::string CreateDatabase();

 private:
  bool InitDb();

  const bool fsync_;
  TempDir dir_;
  bool initialized_ = false;
  int port_ = 0;
  int wanted_port_ = 0;
  int databases_ = 0;
  std::string error_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace egress
