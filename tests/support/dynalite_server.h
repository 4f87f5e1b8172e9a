#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.h"

namespace egress {

// dynalite (a DynamoDB-compatible server on Node.js, tests/support/dynalite/, installed by
// ./dev test) on 127.0.0.1 for integration tests, on a free port, its tables in memory and
// created at once (--createTableMs 0). Stop() kills it (as an outage: its tables are gone),
// Start() brings it back on the same port, empty. The destructor stops it.
class DynaliteServer {
 public:
  // The dynalite script, or "" when it is not installed (tests then skip).
  static std::string Binary();

  DynaliteServer();
  ~DynaliteServer();

  // 0 when dynalite did not start (error() says why).
  int port() const { return port_; }
  const std::string& error() const { return error_; }
  // "http://127.0.0.1:PORT".
  std::string Url() const;

  bool Start();
  void Stop();

 private:
  int port_ = 0;
  int wanted_port_ = 0;
  std::string error_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace egress
