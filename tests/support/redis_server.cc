#include "tests/support/redis_server.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "tests/support/loopback_port.h"

namespace egress {
namespace {

// True once something answers "+PONG" to a PING on the port.
bool Pongs(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const char ping[] = "PING\r\n";
    char buf[16] = {};
    if (write(fd, ping, sizeof(ping) - 1) == sizeof(ping) - 1) {
      const ssize_t n = read(fd, buf, sizeof(buf) - 1);
      ok = n >= 5 && std::string(buf, 5) == "+PONG";
    }
  }
  close(fd);
  return ok;
}

}  // namespace

std::string RedisServer::Binary() {
  for (const char* path : {"/usr/bin/redis-server", "/usr/sbin/redis-server"}) {
    if (access(path, X_OK) == 0) {
      return path;
    }
  }
  return "";
}

RedisServer::RedisServer() { Start(); }

RedisServer::~RedisServer() { Stop(); }

std::string RedisServer::Url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

bool RedisServer::Start() {
  const std::string redis = Binary();
  if (redis.empty()) {
    error_ = "no redis-server binary (apt-get install redis-server)";
    return false;
  }
  // The free port is free when asked, not when redis-server binds it: another test's process
  // (or an outgoing connection's ephemeral port) can take it between. A first start then tries
  // another one; a restart must have its port back, and tries it again.
  const bool first = wanted_port_ == 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (wanted_port_ == 0 || (first && attempt > 0)) {
      wanted_port_ = FreeLoopbackPort();
    }
    if (StartOnce(redis)) {
      return true;
    }
    if (error_.find("Address already in use") == std::string::npos) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bool RedisServer::StartOnce(const std::string& redis) {
  const std::string port = std::to_string(wanted_port_);
  const std::string log_path = dir_.Sub("redis.log");
  std::remove(log_path.c_str());
  const std::string command = "echo listening 127.0.0.1:" + port + "; exec " + redis + " --port " +
                              port + " --bind 127.0.0.1 --save '' --appendonly no" + " --dir " +
                              dir_.path() + " --logfile " + log_path;
  process_ = std::make_unique<ChildProcess>();
  if (process_->Start("/bin/sh", {"-c", command}) != wanted_port_) {
    error_ = process_->error();
    return false;
  }
  auto log = [&] {
    std::ifstream file(log_path);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  };
  for (int i = 0; i < 500; ++i) {
    if (Pongs(wanted_port_)) {
      port_ = wanted_port_;
      error_.clear();
      return true;
    }
    if (i % 10 == 9 && log().find("Address already in use") != std::string::npos) {
      break;  // it gave up: no point waiting for it
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  error_ = "redis-server did not answer: " + log();
  process_.reset();
  return false;
}

void RedisServer::Stop() {
  if (process_ != nullptr) {
    process_->Signal(SIGKILL);
    process_.reset();
  }
}

}  // namespace egress
