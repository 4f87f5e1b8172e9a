#include "dispatcher/service/api/http_server.h"

#include <algorithm>
#include <array>
#include <optional>

#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

#include "dispatcher/service/event_log.h"

namespace egress::service {

// What the server and its sessions share; sessions may outlive the server.
struct HttpServerShared {
  HttpServerOptions options;
  HttpHandler handler;
  bool draining = false;
  HttpServerStats stats;
};

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

HttpResponse PlainError(http::status status, unsigned version, std::string_view code,
                        std::string_view message) {
  HttpResponse res{status, version};
  res.set(http::field::content_type, "application/json");
  res.body() = fmt::format(R"({{"error":"{}","message":"{}"}})", code, message);
  res.prepare_payload();
  return res;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<HttpServerShared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {
    boost::system::error_code ec;
    const tcp::endpoint remote = stream_.socket().remote_endpoint(ec);
    if (!ec) {
      peer_ = remote.address();
    }
    ++shared_->stats.open;
    ++shared_->stats.accepted;
  }
  ~Session() { --shared_->stats.open; }

  void Run() { Read(); }

 private:
  const HttpServerOptions& options() const { return shared_->options; }

  // Reads the header first, so the body limit can depend on the request line.
  void Read() {
    parser_.emplace();
    parser_->body_limit(options().max_body_bytes);
    stream_.expires_after(options().read_timeout);  // covers the header and the body
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) {
      OnRead(ec);
      return;
    }
    if (options().body_limit) {
      const auto& header = parser_->get();
      const boost::beast::string_view target = header.target();
      const size_t limit = options().body_limit(header.method(), {target.data(), target.size()});
      // The parser checks a Content-Length against the limit as it ends the header, so a limit
      // set now holds only for chunked bodies: check the declared length here.
      if (parser_->content_length() && *parser_->content_length() > limit) {
        OnRead(http::error::body_limit);
        return;
      }
      parser_->body_limit(limit);
    }
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      if (parser_->got_some()) {
        ++shared_->stats.read_timeouts;  // stalled within a request, not merely idle
      }
      Close();
      return;
    }
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
      Close();
      return;
    }
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      linger_ = true;
      Write(PlainError(http::status::payload_too_large, 11, "payload_too_large",
                       "request body is over the server's limit"));
      return;
    }
    if (ec) {
      keep_alive_ = false;
      linger_ = true;
      Write(PlainError(http::status::bad_request, 11, "bad_request", "malformed HTTP request"));
      return;
    }
    HttpRequest req = parser_->release();
    keep_alive_ = req.keep_alive() && !shared_->draining;
    stream_.expires_never();  // the handler may take a while (fsync); the client waits
    const uint64_t request = ++request_;
    answered_ = false;
    Respond respond = [self = shared_from_this(), request](HttpResponse&& res) {
      self->Answer(request, std::move(res));
    };
    // The guard of last resort: no request can end the process. A handler that throws (a bug:
    // handlers return errors as values) gets a 500 envelope and an error event, and the
    // connection closes; a late answer to that request is dropped.
    try {
      shared_->handler(std::move(req), peer_, std::move(respond));
    } catch (const std::exception& e) {
      HandlerFailed(request, e.what());
    } catch (...) {
      HandlerFailed(request, "unknown exception");
    }
  }

  // The one answer to request number `request`; any other is dropped.
  void Answer(uint64_t request, HttpResponse&& res) {
    if (request != request_ || answered_) {
      return;
    }
    answered_ = true;
    Write(std::move(res));
  }

  void HandlerFailed(uint64_t request, std::string_view what) {
    LogEvent(LogLevel::kError, "handler_failed", {{"error", std::string(what)}});
    keep_alive_ = false;
    Answer(request, PlainError(http::status::internal_server_error, 11, "internal",
                               "the server failed on this request; the event is logged"));
  }

  void Write(HttpResponse&& res) {
    res.keep_alive(keep_alive_);
    auto owned = std::make_shared<HttpResponse>(std::move(res));
    stream_.expires_after(options().write_timeout);
    http::async_write(
        stream_, *owned,
        [self = shared_from_this(), owned](beast::error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      ++shared_->stats.write_timeouts;
    }
    if (ec || !keep_alive_) {
      Close();
      if (!ec && linger_) {
        Linger();
      }
      return;
    }
    Read();
  }

  // After refusing a request whose body was not read: reads and drops what the client still
  // sends, until its FIN or kLingerTime, so that closing a socket with unread data (which sends
  // RST, and the client may then lose the answer before reading it) only happens to a client
  // that keeps sending. nginx's lingering_close does the same.
  void Linger() {
    static constexpr std::chrono::seconds kLingerTime{2};
    if (!linger_started_) {
      linger_started_ = true;
      stream_.expires_after(kLingerTime);
    }
    stream_.async_read_some(asio::buffer(linger_buffer_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (!ec) {
                                self->Linger();
                              }
                            });
  }

  // Sends FIN; the socket itself closes when the last operation holding the session ends (at
  // once when none is pending). After a timeout the stream has closed the socket already.
  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<HttpServerShared> shared_;
  bool keep_alive_ = true;
  bool linger_ = false;          // the request was refused with its body (maybe) unread
  bool linger_started_ = false;  // Linger's deadline is set
  std::array<char, 16 << 10> linger_buffer_;
  uint64_t request_ = 0;    // the number of the request being answered
  asio::ip::address peer_;  // the client's address; unspecified when it could not be read
  bool answered_ = false;
};

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
      shared_(std::make_shared<HttpServerShared>(
          HttpServerShared{.options = std::move(options), .handler = std::move(handler)})),
      backoff_timer_(io) {}

HttpServer::~HttpServer() { StopAccepting(); }

const HttpServerStats& HttpServer::stats() const { return shared_->stats; }

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
        if (shared->stats.open >= shared->options.max_connections) {
          ++shared->stats.refused;
          boost::system::error_code ignored;
          socket.close(ignored);  // the client sees the connection closed before any answer
        } else {
          std::make_shared<Session>(std::move(socket), shared)->Run();
        }
        Accept();
      });
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
}

}  // namespace egress::service
