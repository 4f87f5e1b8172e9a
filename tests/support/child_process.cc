#include "tests/support/child_process.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <sys/wait.h>

#include "dispatcher/base/clock.h"

extern char** environ;

namespace egress {

std::string BuildDir() {
  if (const char* dir = std::getenv("EGRESS_BIN_DIR"); dir != nullptr && *dir != '\0') {
    return std::string(dir) + "/..";
  }
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string exe = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string("./x");
  return exe.substr(0, exe.rfind('/')) + "/..";
}

// EGRESS_SOURCE_DIR is set for this file alone (tests/CMakeLists.txt), so no other object
// depends on where the checkout is.
std::string SourceDir() { return EGRESS_SOURCE_DIR; }

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    Signal(SIGTERM, 10'000);
  }
  if (stdout_fd_ >= 0) {
    close(stdout_fd_);
  }
}

int ChildProcess::Start(const std::string& path, const std::vector<std::string>& args,
                        int timeout_ms) {
  int fds[2];
  if (pipe(fds) != 0) {
    error_ = "pipe failed";
    return 0;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  for (const std::string& a : args) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  const int rc = posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  stdout_fd_ = fds[0];
  if (rc != 0) {
    pid_ = -1;
    error_ = "cannot start " + path;
    return 0;
  }
  std::string line;
  const SystemClock clock;
  const auto deadline = clock.Now() + std::chrono::milliseconds(timeout_ms);
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Now());
    pollfd ready{.fd = stdout_fd_, .events = POLLIN, .revents = 0};
    char buf[256];
    ssize_t got = 0;
    if (left.count() <= 0 || poll(&ready, 1, static_cast<int>(left.count())) != 1 ||
        (got = read(stdout_fd_, buf, sizeof buf)) <= 0) {
      error_ = path + " did not report 'listening HOST:PORT' in time; got: " + line;
      return 0;
    }
    line.append(buf, static_cast<size_t>(got));
  }
  line = line.substr(0, line.find('\n'));
  const size_t colon = line.rfind(':');
  if (line.rfind("listening ", 0) != 0 || colon == std::string::npos) {
    error_ = "unexpected first line: " + line;
    return 0;
  }
  return std::atoi(line.c_str() + colon + 1);
}

int ChildProcess::Signal(int signo, int timeout_ms) {
  if (pid_ <= 0) {
    return -1;
  }
  kill(pid_, signo);
  int status = 0;
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

}  // namespace egress
