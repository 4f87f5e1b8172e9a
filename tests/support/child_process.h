#pragma once

#include <string>
#include <vector>

#include <sys/types.h>

namespace egress {

// A server binary started for an integration test. It must print "listening HOST:PORT" as its
// first stdout line; Start() waits for it (bounded). The destructor sends SIGTERM, waits up to
// 10 s, then SIGKILLs.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Returns the port, or 0 with `error()` set when it did not start or report in time.
  int Start(const std::string& path, const std::vector<std::string>& args, int timeout_ms = 20'000);
  // Sends `signo` and waits for the exit; returns the wait status (or -1).
  int Signal(int signo, int timeout_ms = 20'000);
  pid_t pid() const { return pid_; }
  const std::string& error() const { return error_; }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string error_;
};

// build/relay-egress-sim and build/relay-egress, found from $EGRESS_BIN_DIR (build/tests) or
// next to the test binary.
std::string BuildDir();

// The checkout the tests were built from (absolute), as CMake configured it. (__FILE__ is no
// guide: ccache's base_dir makes it relative to the build directory.)
std::string SourceDir();

}  // namespace egress
