#include "dispatcher/service/serve.h"

#include <csignal>
#include <cstdio>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <curl/curl.h>
#include <fmt/format.h>

#include "dispatcher/service/event_log.h"

namespace egress::service {
namespace {

// Runs the loop until it stops. An exception escaping a handler (a bug: errors are values) is
// logged and the loop goes on, as Asio allows: the request or attempt it belonged to is lost
// until its client or the recovery of in-flight work retries it, the process and every other
// request are not.
void RunGuarded(boost::asio::io_context& io) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      LogEvent(LogLevel::kError, "loop_handler_failed", {{"error", std::string(e.what())}});
    } catch (...) {
      LogEvent(LogLevel::kError, "loop_handler_failed", {{"error", "unknown exception"}});
    }
  }
}

}  // namespace

int RunService(ServiceOptions options, Millis grace) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  std::signal(SIGPIPE, SIG_IGN);
  boost::asio::io_context io;
  SystemClock clock;
  const std::string data_dir = options.store.path;
  auto service = Service::Start(io, clock, std::move(options));
  if (!service) {
    std::fprintf(stderr, "relay-egress: %s\n", service.error().ToString().c_str());
    LogEvent(LogLevel::kError, "start_failed", {{"error", service.error().ToString()}});
    return 3;
  }
  const auto ep = (*service)->endpoint();
  fmt::print("listening {}:{}\n", ep.address().to_string(), ep.port());
  std::fflush(stdout);
  LogEvent(LogLevel::kInfo, "serving",
           {{"listen", fmt::format("{}:{}", ep.address().to_string(), ep.port())},
            {"data_dir", data_dir}});
  int exit_code = 0;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) {
      return;
    }
    LogEvent(LogLevel::kInfo, "draining", {{"signal", signo}, {"grace_ms", grace.count()}});
    (*service)->Shutdown(grace, [&](Status closed) {
      if (!closed.ok()) {
        LogEvent(LogLevel::kError, "close_failed", {{"error", closed.ToString()}});
        exit_code = 1;
      }
      io.stop();
    });
  });
  RunGuarded(io);
  service->reset();
  curl_global_cleanup();
  LogEvent(LogLevel::kInfo, "stopped", {{"exit_code", exit_code}});
  return exit_code;
}

}  // namespace egress::service
