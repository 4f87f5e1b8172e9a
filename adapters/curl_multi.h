#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/status.h"

namespace egress::adapters {

// libcurl's multi interface driven by an Asio loop, after curl's docs/examples/multi-uv.c
// (CONTRIBUTING.md): curl tells us which sockets to watch and when to time out; Asio waits and
// calls curl_multi_socket_action back. libcurl is never called from inside a libcurl callback.
//
// Two departures from multi-uv.c, both measured (bench/README.md, section 1):
// - A connection socket stays registered with the reactor while curl keeps the connection idle
//   in its cache (curl says CURL_POLL_REMOVE after every transfer on a keep-alive connection);
//   it is deregistered when curl closes it, which it does through CloseSocket. This saves an
//   epoll_ctl ADD + DEL and a descriptor per request. Easy handles must therefore be set up with
//   ConfigureEasy, and their CURLOPT_OPENSOCKETFUNCTION must call Adopt with the new socket.
// - The timer is re-armed only when curl's next timeout moves earlier; a later one is noted
//   and the timer, when it fires early, re-arms itself for it. Re-arming a steady_timer that is
//   the reactor's earliest reprograms its timerfd, a syscall curl would otherwise cause several
//   times per transfer.
//
// All methods, and every completion, run on the thread running `io`. Handlers capture `this`
// only behind a liveness flag, so destroying a CurlMulti with handlers still queued is safe;
// easy handles still added are removed (and their completions dropped) by the destructor.
// `clock` must be the real steady clock (SystemClock): it places curl's timeouts in time.
// Requires curl_global_init to have run (main does it once).
class CurlMulti {
 public:
  // A finished transfer: the CURL* and its CURLcode. Called (posted) after the handle was
  // removed from the multi handle; the caller then owns the easy handle again.
  using Done = std::function<void(void* easy, int curl_code)>;

  struct Limits {
    long max_host_connections = 16;     // per host; 0 = unlimited. Default: 16.
    long max_total_connections = 256;   // Default: 256.
    long max_concurrent_streams = 100;  // HTTP/2 streams per connection. Default: 100.
  };

  // `done` is called once for every transfer Add started and Remove did not take back.
  CurlMulti(boost::asio::io_context& io, const Clock& clock, const Limits& limits, Done done);
  ~CurlMulti();
  CurlMulti(const CurlMulti&) = delete;
  CurlMulti& operator=(const CurlMulti&) = delete;

  // Sets the options every easy handle given to Add needs (the close-socket callback). Once per
  // easy handle; they survive between transfers (no curl_easy_reset).
  void ConfigureEasy(void* easy);
  // Starts `easy` (a configured CURL*).
  Status Add(void* easy);
  // Takes back a running (or finished, not yet completed) transfer without calling `done`.
  void Remove(void* easy);
  size_t running() const { return running_; }

  // For the easy handles' CURLOPT_OPENSOCKETFUNCTION: `fd` is a connection socket curl just had
  // opened; it will be closed through CloseSocket, so it may stay registered while idle.
  void Adopt(int fd);
  // Sockets adopted so far: the connections curl opened.
  uint64_t sockets_opened() const { return sockets_opened_; }

 private:
  struct Socket;
  static int OnSocket(void* easy, int fd, int what, void* self, void* socketp);
  static int OnTimer(void* multi, long timeout_ms, void* self);
  static int OnCloseSocket(void* self, int fd);
  std::shared_ptr<Socket> NewSocket(int fd, bool adopted);
  void Forget(int fd);
  void Watch(const std::shared_ptr<Socket>& sock);
  void ArmTimer(SteadyTime now);
  void PostTimeout();
  void Action(int fd, int flags);
  void Drain();
  void Complete();

  boost::asio::io_context& io_;
  const Clock& clock_;
  void* multi_;  // CURLM*
  Done done_;
  std::shared_ptr<bool> alive_;
  size_t running_ = 0;
  uint64_t sockets_opened_ = 0;
  std::unordered_map<int, std::shared_ptr<Socket>> sockets_;

  boost::asio::steady_timer timer_;
  std::optional<SteadyTime> due_;    // curl's next timeout, when it has one
  std::optional<SteadyTime> armed_;  // when timer_ fires, while a wait is pending
  uint64_t timer_calls_ = 0;         // OnTimer calls so far
  bool timeout_posted_ = false;      // a 0 ms timeout is queued on the loop

  // Transfers curl finished, completed by one posted handler per loop turn.
  std::vector<std::pair<void*, int>> finished_;
  bool complete_posted_ = false;
};

}  // namespace egress::adapters
