#include "dispatcher/service/serve.h"

#include <csignal>
#include <cstdio>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <curl/curl.h>
#include <fmt/format.h>

namespace egress::service {

int RunService(ServiceOptions options, Millis grace) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  std::signal(SIGPIPE, SIG_IGN);
  boost::asio::io_context io;
  SystemClock clock;
  const std::string data_dir = options.store.path;
  auto service = Service::Start(io, clock, std::move(options));
  if (!service) {
    std::fprintf(stderr, "relay-egress: %s\n", service.error().ToString().c_str());
    return 3;
  }
  const auto ep = (*service)->endpoint();
  fmt::print("listening {}:{}\n", ep.address().to_string(), ep.port());
  std::fflush(stdout);
  std::fprintf(stderr, "relay-egress: serving on %s:%u, store %s\n",
               ep.address().to_string().c_str(), ep.port(), data_dir.c_str());
  int exit_code = 0;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) {
      return;
    }
    std::fprintf(stderr, "relay-egress: signal %d: draining\n", signo);
    (*service)->Shutdown(grace, [&](Status closed) {
      if (!closed.ok()) {
        std::fprintf(stderr, "relay-egress: close: %s\n", closed.ToString().c_str());
        exit_code = 1;
      }
      io.stop();
    });
  });
  io.run();
  service->reset();
  curl_global_cleanup();
  std::fprintf(stderr, "relay-egress: stopped\n");
  return exit_code;
}

}  // namespace egress::service
