#include "tests/simulator/http_server.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

namespace egress::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

constexpr auto kIdleTimeout = std::chrono::seconds(120);
constexpr uint64_t kBodyLimit = 8 * 1024 * 1024;

SimRequest ToSimRequest(http::request<http::string_body>&& req) {
  SimRequest out;
  out.method = std::string(req.method_string());
  std::string_view target(req.target().data(), req.target().size());
  size_t q = target.find('?');
  out.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) {
    out.query = std::string(target.substr(q + 1));
  }
  for (const auto& field : req) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    out.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  out.body = std::move(req.body());
  return out;
}

// One connection: read a request, answer it (after an optional delay), repeat while keep-alive.
// Runs on its own strand; handlers hold shared_from_this().
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, const RequestHandler& handler)
      : stream_(std::move(socket)), timer_(stream_.get_executor()), handler_(handler) {}

  void Start() {
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&Session::DoRead, shared_from_this()));
  }

 private:
  void DoRead() {
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t /*bytes*/) {
    if (ec == http::error::end_of_stream) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      return;
    }
    if (ec) {
      return;
    }
    http::request<http::string_body> req = parser_->release();
    const unsigned version = req.version();
    const bool keep_alive = req.keep_alive();
    SimResponse sim = handler_(ToSimRequest(std::move(req)));
    if (sim.reset_connection && sim.delay_ms <= 0) {
      Reset();
      return;
    }
    res_ = {};
    res_.version(version);
    res_.keep_alive(keep_alive);
    res_.result(static_cast<unsigned>(sim.status));
    for (auto& [name, value] : sim.headers) {
      res_.set(name, value);
    }
    if (!sim.body.empty() || sim.status != 204) {
      res_.set(http::field::content_type, sim.content_type);
    }
    res_.body() = std::move(sim.body);
    res_.prepare_payload();
    reset_after_delay_ = sim.reset_connection;
    if (sim.delay_ms > 0) {
      timer_.expires_after(std::chrono::milliseconds(sim.delay_ms));
      timer_.async_wait(beast::bind_front_handler(&Session::OnDelay, shared_from_this()));
      return;
    }
    DoWrite();
  }

  void OnDelay(beast::error_code ec) {
    if (ec) {
      return;
    }
    if (reset_after_delay_) {
      Reset();
      return;
    }
    DoWrite();
  }

  void DoWrite() {
    http::async_write(stream_, res_,
                      beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t /*bytes*/) {
    if (ec) {
      return;
    }
    if (!res_.keep_alive()) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      return;
    }
    DoRead();
  }

  // Closes with SO_LINGER 0, so the peer sees a connection reset.
  void Reset() {
    beast::error_code ignored;
    stream_.socket().set_option(asio::socket_base::linger(true, 0), ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  bool reset_after_delay_ = false;
  const RequestHandler& handler_;
};

// Accepts connections and starts a Session on a fresh strand for each.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& ioc, tcp::acceptor&& acceptor, const RequestHandler& handler)
      : ioc_(ioc), acceptor_(std::move(acceptor)), handler_(handler) {}

  void DoAccept() {
    acceptor_.async_accept(asio::make_strand(ioc_),
                           beast::bind_front_handler(&Listener::OnAccept, shared_from_this()));
  }

 private:
  void OnAccept(beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) {
      return;
    }
    if (!ec) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(std::move(socket), handler_)->Start();
    }
    DoAccept();
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  const RequestHandler& handler_;
};

Status Bind(asio::io_context& ioc, const ServerOptions& options, tcp::acceptor& acceptor) {
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(options.address, ec);
  if (ec) {
    return Status::InvalidArgument("not an IP address: " + options.address);
  }
  if (!address.is_loopback()) {
    return Status::InvalidArgument("the simulator binds loopback only, not " + options.address);
  }
  tcp::endpoint endpoint(address, options.port);
  acceptor = tcp::acceptor(asio::make_strand(ioc));
  if (acceptor.open(endpoint.protocol(), ec); ec) {
    return Status::IoError("open: " + ec.message());
  }
  if (acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) {
    return Status::IoError("reuse_address: " + ec.message());
  }
  if (acceptor.bind(endpoint, ec); ec) {
    return Status::IoError(
        fmt::format("bind {}:{}: {}", options.address, options.port, ec.message()));
  }
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return Status::IoError("listen: " + ec.message());
  }
  return Status::Ok();
}

}  // namespace

Status RunServer(const ServerOptions& options, RequestHandler handler,
                 const std::function<void(const std::string&)>& on_listening) {
  const int threads = std::max(1, options.threads);
  asio::io_context ioc(threads);
  tcp::acceptor acceptor(ioc);
  if (Status s = Bind(ioc, options, acceptor); !s.ok()) {
    return s;
  }
  tcp::endpoint bound = acceptor.local_endpoint();
  std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                             : bound.address().to_string();
  on_listening(fmt::format("{}:{}", host, bound.port()));
  std::make_shared<Listener>(ioc, std::move(acceptor), handler)->DoAccept();
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&ioc](const beast::error_code&, int) { ioc.stop(); });
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) {
    pool.emplace_back([&ioc] { ioc.run(); });
  }
  ioc.run();
  for (std::thread& t : pool) {
    t.join();
  }
  return Status::Ok();
}

}  // namespace egress::sim
