#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace egress {

// Debian's redis-server on 127.0.0.1 for integration tests, on a free port, with nothing
// persisted (--save '' --appendonly no) and its files in a temp dir. Stop() kills it (as an
// outage), Start() brings it back on the same port, empty. The destructor stops it.
class RedisServer {
 public:
  // The redis-server binary, or "" when none is installed (tests then skip).
  static std::string Binary();

  RedisServer();
  ~RedisServer();

  // 0 when redis-server did not start (error() says why).
  int port() const { return port_; }
  const std::string& error() const { return error_; }
  // "redis://127.0.0.1:PORT".
  std::string Url() const;

  // Starts it on port() (the first time on a free port); false with error() when it failed.
  bool Start();
  // Kills it (SIGKILL: an outage, not a shutdown).
  void Stop();

 private:
  // One try on wanted_port_; error_ says why it failed.
  bool StartOnce(const std::string& redis);

  TempDir dir_;
  int port_ = 0;
  int wanted_port_ = 0;
  std::string error_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace egress
