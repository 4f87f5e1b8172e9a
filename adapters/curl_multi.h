#pragma once

#include <functional>
#include <memory>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dispatcher/status.h"

namespace egress::adapters {

// libcurl's multi interface driven by an Asio loop, after curl's docs/examples/multi-uv.c
// (STYLE.md 2.5): curl tells us which sockets to watch and when to time out; Asio waits and
// calls curl_multi_socket_action back. libcurl is never called from inside a libcurl callback.
//
// All methods, and every completion, run on the thread running `io`. Handlers capture `this`
// only behind a liveness flag, so destroying a CurlMulti with handlers still queued is safe;
// easy handles still added are removed (and their completions dropped) by the destructor.
// Requires curl_global_init to have run (main does it once).
class CurlMulti {
 public:
  // `easy` is a CURL*. `curl_code` is its CURLcode.
  using Done = std::function<void(int curl_code)>;

  struct Limits {
    long max_host_connections = 16;    // per host; 0 = unlimited. Default: 16.
    long max_total_connections = 256;  // Default: 256.
  };

  CurlMulti(boost::asio::io_context& io, const Limits& limits);
  ~CurlMulti();
  CurlMulti(const CurlMulti&) = delete;
  CurlMulti& operator=(const CurlMulti&) = delete;

  // Starts `easy` (a configured CURL*). `done` is posted to the loop when it completes, after
  // the handle was removed from the multi handle; the caller then owns `easy` again.
  Status Add(void* easy, Done done);
  // Removes a running transfer without calling its `done`. The caller owns `easy` again.
  void Remove(void* easy);
  size_t running() const { return transfers_.size(); }

 private:
  struct Socket;
  static int OnSocket(void* easy, int fd, int what, void* self, void* socketp);
  static int OnTimer(void* multi, long timeout_ms, void* self);
  void Watch(const std::shared_ptr<Socket>& sock);
  void Action(int fd, int flags);
  void Drain();

  boost::asio::io_context& io_;
  void* multi_;  // CURLM*
  boost::asio::steady_timer timer_;
  std::shared_ptr<bool> alive_;
  std::unordered_map<int, std::shared_ptr<Socket>> sockets_;
  std::unordered_map<void*, Done> transfers_;
};

}  // namespace egress::adapters
