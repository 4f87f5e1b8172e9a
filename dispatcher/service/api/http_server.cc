#include "dispatcher/service/api/http_server.h"

#include <algorithm>

#include <fmt/format.h>

#include "dispatcher/service/api/http_session.h"
#include "dispatcher/service/event_log.h"

namespace egress::service {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

}  // namespace

Result<tcp::endpoint> ResolveListenAddress(const HostPort& listen) {
  boost::system::error_code ec;
  const asio::ip::address literal = asio::ip::make_address(listen.host, ec);
  if (!ec) {
    return tcp::endpoint(literal, listen.port);
  }
  asio::io_context io;
  tcp::resolver resolver(io);
  // Not address_configured (Asio's default): with only loopback up it would drop "localhost".
  const tcp::resolver::results_type results = resolver.resolve(
      listen.host, std::to_string(listen.port), tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Status::Unavailable(
        fmt::format("cannot resolve host '{}': {}", listen.host, ec ? ec.message() : "no address"));
  }
  for (const auto& entry : results) {
    if (entry.endpoint().address().is_v4()) {
      return entry.endpoint();
    }
  }
  return results.begin()->endpoint();
}

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, HttpHandler handler)
    : io_(io),
      acceptor_(io),
      shared_(std::make_shared<HttpServerShared>(io, std::move(options), std::move(handler))),
      backoff_timer_(io) {}

HttpServer::~HttpServer() { StopAccepting(); }

const HttpServerStats& HttpServer::stats() const { return shared_->stats; }

void HttpServer::Freed(size_t bytes) { shared_->ReleaseAfter(bytes); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(asio::io_context& io,
                                                      const HttpServerOptions& options,
                                                      HttpHandler handler) {
  Result<tcp::endpoint> endpoint = ResolveListenAddress(options.listen);
  if (!endpoint) {
    return Status::Unavailable(
        fmt::format("listen on {}: {}", options.listen.ToString(), endpoint.error().message()));
  }
  std::unique_ptr<HttpServer> server(new HttpServer(io, options, std::move(handler)));
  boost::system::error_code ec;
  server->acceptor_.open(endpoint->protocol(), ec);
  if (!ec) {
    server->acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    server->acceptor_.bind(*endpoint, ec);
  }
  if (!ec) {
    server->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return Status::Unavailable(
        fmt::format("listen on {}: {}", options.listen.ToString(), ec.message()));
  }
  server->endpoint_ = server->acceptor_.local_endpoint(ec);
  server->Accept();
  return server;
}

void HttpServer::Accept() {
  acceptor_.async_accept(
      [this, shared = shared_](boost::system::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || shared->draining) {
          return;
        }
        if (ec) {
          OnAcceptFailed(ec);
          return;
        }
        if (backoff_.count() != 0) {
          LogEvent(LogLevel::kInfo, "accept_resumed");
          backoff_ = std::chrono::milliseconds(0);
        }
        OnAccepted(std::move(socket));
        Accept();
      });
}

// Over max_connections_per_address (peers in trusted_proxies are not counted) a connection is
// closed at once; over max_connections it gets a health slot when one is free, else it is
// closed. The client sees its connection closed before any answer.
void HttpServer::OnAccepted(tcp::socket&& socket) {
  HttpServerShared& shared = *shared_;
  const HttpServerOptions& options = shared.options;
  boost::system::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  std::string key;
  if (!ec && options.max_connections_per_address > 0 &&
      !options.trusted_proxies.Trusts(remote.address())) {
    key = AddressKey(remote.address());
    if (shared.per_address[key] >= options.max_connections_per_address) {
      ++shared.stats.refused_per_address;
      socket.close(ec);
      return;
    }
  }
  bool health_only = false;
  if (shared.stats.open - shared.health_open >= options.max_connections) {
    if (shared.health_open >= options.health_connections) {
      ++shared.stats.refused;
      if (!key.empty() && shared.per_address[key] == 0) {
        shared.per_address.erase(key);
      }
      socket.close(ec);
      return;
    }
    health_only = true;
    ++shared.stats.health_slot_connections;
  }
  if (!key.empty()) {
    ++shared.per_address[key];
  }
  StartSession(std::move(socket), shared_, std::move(key), health_only);
}

// accept() failing with EMFILE leaves the connection in the backlog, so accepting again at once
// fails again at once: a busy loop. Wait, doubling the wait while it keeps failing; log the
// first failure of a run and its end (accept_resumed), count every one.
void HttpServer::OnAcceptFailed(const boost::system::error_code& ec) {
  ++shared_->stats.accept_failures;
  if (backoff_.count() == 0) {
    LogEvent(LogLevel::kWarn, "accept_failed",
             {{"error", ec.message()}, {"open_connections", shared_->stats.open}});
    backoff_ = std::max(shared_->options.accept_backoff, std::chrono::milliseconds(1));
  } else {
    backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(1000));
  }
  backoff_timer_.expires_after(backoff_);
  backoff_timer_.async_wait([this, shared = shared_](const boost::system::error_code& wait_ec) {
    if (!wait_ec && !shared->draining) {
      Accept();
    }
  });
}

void HttpServer::StopAccepting() {
  if (shared_->draining) {
    return;
  }
  shared_->draining = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  backoff_timer_.cancel();
  shared_->release_timer.cancel();
}

}  // namespace egress::service
