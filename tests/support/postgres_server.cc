#include "tests/support/postgres_server.h"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "storage/pg_connection.h"
#include "tests/support/loopback_port.h"
#include "tests/support/run_command.h"

namespace egress {
namespace {

// The command prefix that runs a PostgreSQL program as "nobody" when we are root: PostgreSQL
// refuses to run as root.
std::vector<std::string> AsServerUser() {
  if (geteuid() != 0) {
    return {};
  }
  return {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"};
}

// Hands `dir` and everything in it to "nobody" (when root).
bool ChownToServerUser(const std::string& dir, std::string& error) {
  if (geteuid() != 0) {
    return true;
  }
  const passwd* pw = getpwnam("nobody");
  if (pw == nullptr) {
    error = "no user 'nobody' to run PostgreSQL as";
    return false;
  }
  if (chown(dir.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
    error = "cannot chown " + dir + " to nobody";
    return false;
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (lchown(e.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      error = "cannot chown " + e.path().string() + " to nobody";
      return false;
    }
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::string PostgresServer::BinDir() {
  const std::string dir = "/usr/lib/postgresql/15/bin";
  if (access((dir + "/initdb").c_str(), X_OK) == 0 &&
      access((dir + "/postgres").c_str(), X_OK) == 0) {
    return dir;
  }
  return "";
}

PostgresServer& PostgresServer::Shared() {
  // Destroyed at exit, which kills the server and removes its files.
  static PostgresServer server;
  return server;
}

PostgresServer::TestDatabase PostgresServer::FreshDatabase() {
  TestDatabase db;
  if (BinDir().empty()) {
    db.not_installed = true;
    return db;
  }
  PostgresServer& pg = Shared();
  if (pg.port() == 0) {
    db.error = pg.error();
    return db;
  }
  const std::string name = pg.CreateDatabase();
  if (name.empty()) {
    db.error = pg.error();
    return db;
  }
  db.url = pg.Url(name);
  return db;
}

PostgresServer::PostgresServer(bool fsync) : fsync_(fsync) { Start(); }

PostgresServer::~PostgresServer() { Stop(); }

std::string PostgresServer::Url(const std::string& database) const {
  return "postgresql://egress@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

bool PostgresServer::InitDb() {
  if (!ChownToServerUser(dir_.path(), error_)) {
    return false;
  }
  std::vector<std::string> args = AsServerUser();
  std::string program = BinDir() + "/initdb";
  if (!args.empty()) {
    args.push_back(program);
    program = args.front();
    args.erase(args.begin());
  }
  for (const char* a :
       {"--auth=trust", "--username=egress", "--encoding=UTF8", "--no-locale", "--no-sync"}) {
    args.emplace_back(a);
  }
  args.push_back("--pgdata=" + dir_.Sub("data"));
  CommandOutput out = RunCommand(program, args);
  if (out.exit_code != 0) {
    error_ = "initdb failed: " + out.err + out.out;
    return false;
  }
  initialized_ = true;
  return true;
}

bool PostgresServer::Start() {
  if (BinDir().empty()) {
    error_ = "PostgreSQL 15 is not installed (apt-get install postgresql-15)";
    return false;
  }
  if (!initialized_ && !InitDb()) {
    return false;
  }
  if (wanted_port_ == 0) {
    wanted_port_ = FreeLoopbackPort();
  }
  const std::string port = std::to_string(wanted_port_);
  // The server dies with the test binary, also when it aborts (the kernel's parent-death
  // signal, set after the change of user, which would clear it).
  std::vector<std::string> prefix = AsServerUser();
  if (prefix.empty()) {
    prefix.push_back("/usr/bin/setpriv");
  }
  prefix.push_back("--pdeathsig=KILL");
  std::string command = "echo listening 127.0.0.1:" + port + "; exec";
  for (const std::string& a : prefix) {
    command += " " + a;
  }
  command += " " + BinDir() + "/postgres -D " + dir_.Sub("data") +
             " -c listen_addresses=127.0.0.1 -c port=" + port +
             " -c unix_socket_directories= -c fsync=" + (fsync_ ? "on" : "off") +
             " -c synchronous_commit=on -c full_page_writes=off -c max_connections=200"
             " -c shared_buffers=32MB -c log_min_messages=warning 2>>" +
             dir_.Sub("postgres.log");
  // A killed server's backends leave within moments; until then the new one refuses to start.
  for (int attempt = 0; attempt < 6; ++attempt) {
    process_ = std::make_unique<ChildProcess>();
    if (process_->Start("/bin/sh", {"-c", command}) != wanted_port_) {
      error_ = process_->error();
      return false;
    }
    const std::string url = "postgresql://egress@127.0.0.1:" + port + "/postgres";
    for (int i = 0; i < 250; ++i) {
      if (storage::PgConnection::Connect(url + "?connect_timeout=2")) {
        port_ = wanted_port_;
        error_.clear();
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    process_.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  error_ = "postgres did not start: " + ReadFile(dir_.Sub("postgres.log"));
  return false;
}

void PostgresServer::Stop() {
  if (process_ != nullptr) {
    process_->Signal(SIGKILL);
    process_.reset();
  }
  port_ = 0;
}

std::string PostgresServer::CreateDatabase() {
  auto c = storage::PgConnection::Connect(Url());
  if (!c) {
    error_ = c.error().ToString();
    return "";
  }
  const std::string name = "t" + std::to_string(getpid()) + "_" + std::to_string(++databases_);
  if (Status s = (*c)->Run("CREATE DATABASE " + name); !s.ok()) {
    error_ = s.ToString();
    return "";
  }
  return name;
}

}  // namespace egress
