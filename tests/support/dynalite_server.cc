#include "tests/support/dynalite_server.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "tests/support/loopback_port.h"

namespace egress {

std::string DynaliteServer::Binary() {
  const std::string path = SourceDir() + "/.cache/dynalite/node_modules/.bin/dynalite";
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

DynaliteServer::DynaliteServer() { Start(); }

DynaliteServer::~DynaliteServer() { Stop(); }

std::string DynaliteServer::Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

bool DynaliteServer::Start() {
  const std::string dynalite = Binary();
  if (dynalite.empty()) {
    error_ = "dynalite is not installed (./dev test installs it)";
    return false;
  }
  const bool first = wanted_port_ == 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (wanted_port_ == 0 || (first && attempt > 0)) {
      wanted_port_ = FreeLoopbackPort();
    }
    const std::string port = std::to_string(wanted_port_);
    const std::string command = "echo listening 127.0.0.1:" + port + "; exec " + dynalite +
                                " --host 127.0.0.1 --port " + port + " --createTableMs 0" +
                                " --deleteTableMs 0 --updateTableMs 0";
    process_ = std::make_unique<ChildProcess>();
    if (process_->Start("/bin/sh", {"-c", command}) != wanted_port_) {
      error_ = process_->error();
      process_.reset();
      return false;
    }
    for (int i = 0; i < 500; ++i) {
      if (LoopbackAccepts(wanted_port_)) {
        port_ = wanted_port_;
        error_.clear();
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    error_ = "dynalite did not listen on " + port;
    process_.reset();
  }
  return false;
}

void DynaliteServer::Stop() {
  if (process_ != nullptr) {
    process_->Signal(SIGKILL);
    process_.reset();
  }
}

}  // namespace egress
