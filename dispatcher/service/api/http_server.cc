#include "dispatcher/service/api/http_server.h"

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
  Session(tcp::socket&& socket, std::shared_ptr<HttpHandler> handler,
          const HttpServerOptions& options, std::shared_ptr<bool> draining)
      : stream_(std::move(socket)),
        handler_(std::move(handler)),
        options_(options),
        draining_(std::move(draining)) {}

  void Run() { Read(); }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    stream_.expires_after(options_.idle_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
        ec == beast::error::timeout) {
      Close();
      return;
    }
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      Write(PlainError(http::status::payload_too_large, 11, "payload_too_large",
                       "request body is over the server's limit"));
      return;
    }
    if (ec) {
      keep_alive_ = false;
      Write(PlainError(http::status::bad_request, 11, "bad_request", "malformed HTTP request"));
      return;
    }
    HttpRequest req = parser_->release();
    keep_alive_ = req.keep_alive() && !*draining_;
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
      (*handler_)(std::move(req), std::move(respond));
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
    http::async_write(
        stream_, *owned,
        [self = shared_from_this(), owned](beast::error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    if (ec || !keep_alive_) {
      Close();
      return;
    }
    Read();
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<HttpHandler> handler_;
  const HttpServerOptions options_;
  std::shared_ptr<bool> draining_;
  bool keep_alive_ = true;
  uint64_t request_ = 0;  // the number of the request being answered
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
      options_(std::move(options)),
      handler_(std::make_shared<HttpHandler>(std::move(handler))),
      acceptor_(io),
      draining_(std::make_shared<bool>(false)) {}

HttpServer::~HttpServer() { StopAccepting(); }

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
  acceptor_.async_accept([this, draining = draining_](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || *draining) {
      return;
    }
    if (!ec) {
      std::make_shared<Session>(std::move(socket), handler_, options_, draining_)->Run();
    }
    Accept();
  });
}

void HttpServer::StopAccepting() {
  if (*draining_) {
    return;
  }
  *draining_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

}  // namespace egress::service
