#include "dispatcher/service/serve.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <curl/curl.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include "dispatcher/service/event_log.h"
#include "storage/pg_connection.h"

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

// Raises the soft limit on open files towards what max_connections needs, plus room for the
// store's files and outbound connections (as servers such as nginx and Envoy do): the usual
// soft limit of 1024 would fail accept() long before 4096 connections. Capped by the hard limit;
// logged when even that is short.
void RaiseOpenFileLimit(size_t max_connections) {
  constexpr rlim_t kHeadroom = 1024;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return;
  }
  const rlim_t want = static_cast<rlim_t>(max_connections) + kHeadroom;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
    const rlim_t raised = limit.rlim_max == RLIM_INFINITY ? want : std::min(want, limit.rlim_max);
    rlimit wanted = limit;
    wanted.rlim_cur = raised;
    if (setrlimit(RLIMIT_NOFILE, &wanted) == 0) {
      limit = wanted;
    }
  }
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
    LogEvent(LogLevel::kWarn, "open_file_limit_low",
             {{"limit", static_cast<uint64_t>(limit.rlim_cur)},
              {"wanted", static_cast<uint64_t>(want)},
              {"max_connections", max_connections}});
  }
}

}  // namespace

int RunService(ServiceOptions options, Millis grace,
               std::function<Result<Service::BudgetDefaults>()> reload_budgets) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  std::signal(SIGPIPE, SIG_IGN);
  RaiseOpenFileLimit(options.http.max_connections);
  boost::asio::io_context io;
  SystemClock clock;
  // Where the deliveries are: the data directory, or the PostgreSQL URL without its password.
  const std::pair<std::string, std::string> store =
      options.postgres
          ? std::pair{std::string("postgres"), storage::RedactConninfo(options.postgres->url)}
          : std::pair{std::string("data_dir"), options.store.path};
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
            {store.first, store.second}});
  // SIGHUP reads the credential references (token_file, secret_env, ...) and the budgets again;
  // a failed read keeps the old values and logs what failed.
  boost::asio::signal_set hangups(io, SIGHUP);
  std::function<void()> wait_hangup = [&] {
    hangups.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) {
        return;
      }
      (*service)->ReloadCredentialRefs([](Status) {});
      if (reload_budgets) {
        (*service)->ReloadBudgets(reload_budgets, [](Status) {});
      }
      wait_hangup();
    });
  };
  wait_hangup();
  int exit_code = 0;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) {
      return;
    }
    LogEvent(LogLevel::kInfo, "draining", {{"signal", signo}, {"grace_ms", grace.count()}});
    hangups.cancel();
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
