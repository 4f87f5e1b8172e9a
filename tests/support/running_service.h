#pragma once

#include <future>
#include <memory>
#include <thread>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "adapters/http_transport.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/status.h"
#include "dispatcher/service/service.h"

namespace egress {

// A Service in this process on a loop thread of its own, for tests that drive it over loopback
// HTTP. Start may be called again after Stop: the same store, a restart. The destructor stops it.
//
//   RunningService svc(clock);
//   ASSERT_TRUE(svc.Start(options, std::make_unique<adapters::ScriptedTransport>(svc.io())).ok());
//   HttpCallAs(token, svc.port(), "GET", "/v1/stats");
class RunningService {
 public:
  explicit RunningService(const Clock& clock) : clock_(clock) {}
  RunningService(const RunningService&) = delete;
  RunningService& operator=(const RunningService&) = delete;
  ~RunningService() { Stop(); }

  // The loop the next (or the running) service runs on: a test transport is made on it before
  // Start. Each Stop replaces it, so that no handler of a stopped service (a job's next slice, a
  // timer) runs in the next one.
  boost::asio::io_context& io() { return *io_; }

  // Starts the service and its loop thread. With `transport` every attempt goes through it (it
  // must run on io()); without, through the real transport. The error is Service::Start's.
  Status Start(service::ServiceOptions options,
               std::unique_ptr<adapters::HttpTransport> transport = nullptr);

  // Shuts the service down (5 s to drain) and joins the loop; adds a test failure when the
  // shutdown reports an error. Nothing when it is not running.
  void Stop();

  bool running() const { return service_ != nullptr; }
  // The API's port (0 before Start).
  int port() const { return port_; }
  service::Service& service() { return *service_; }

  // Runs `fn` on the loop and returns what it returns (the loop's objects are read there only).
  template <typename Fn>
  auto OnLoop(Fn fn) -> decltype(fn()) {
    std::promise<decltype(fn())> result;
    boost::asio::post(*io_, [&] {
      if constexpr (std::is_void_v<decltype(fn())>) {
        fn();
        result.set_value();
      } else {
        result.set_value(fn());
      }
    });
    return result.get_future().get();
  }

 private:
  const Clock& clock_;
  std::unique_ptr<boost::asio::io_context> io_ = std::make_unique<boost::asio::io_context>();
  std::unique_ptr<service::Service> service_;
  std::thread loop_;
  int port_ = 0;
};

}  // namespace egress
