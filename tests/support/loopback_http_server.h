#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace egress {

// A small HTTP/1.1 server on 127.0.0.1 for integration tests: keep-alive, one thread per
// connection, blocking I/O. The handler runs on connection threads (it must be thread-safe).
class LoopbackHttpServer {
 public:
  struct Request {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    int connection = 0;  // which accepted connection carried it (1, 2, ...)
    std::string Header(const std::string& name) const;
  };
  struct Response {
    int status = 200;
    // A "Connection: close" header closes the connection after this response.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    // Wait this long before answering, as a slow receiver would (cut short when the server
    // stops). Default: answer at once.
    std::chrono::milliseconds delay{0};
  };
  // nullopt: never answer (the connection hangs until the server stops), for timeout tests.
  using Handler = std::function<std::optional<Response>(const Request&)>;

  explicit LoopbackHttpServer(Handler handler);
  ~LoopbackHttpServer();  // stops and joins every thread

  int port() const { return port_; }
  std::string Url(const std::string& path) const;
  int connections_accepted() const { return connections_.load(); }

 private:
  void AcceptLoop();
  void Serve(int fd, int connection);

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable stopped_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace egress
