#include "tests/simulator/http_server.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <fmt/format.h>

#include "tests/simulator/sim_request_parser.h"
#include "tests/simulator/sim_response_format.h"

namespace egress::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// A connection with no request for between one and two of these is closed.
constexpr auto kIdleTimeout = std::chrono::seconds(120);
constexpr uint64_t kBodyLimit = 8 * 1024 * 1024;
// Most bytes asked of one read (Beast's http::read asks the same).
constexpr std::size_t kReadLimit = 64 * 1024;

// Sockets and timers bound to a connection's strand: handlers run there without wrapping, and
// no type-erased executor is copied (and allocated) per operation.
using Strand = asio::strand<asio::io_context::executor_type>;
using Socket = asio::basic_stream_socket<tcp, Strand>;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Strand>;

// One connection: read a request, answer it (after an optional delay), repeat while keep-alive.
// Runs on its own strand; I/O handlers hold shared_from_this(), the idle timer a weak_ptr.
// The request, the response and their buffers are reused from one request to the next.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, const RequestHandler& handler)
      : socket_(std::move(socket)),
        idle_timer_(socket_.get_executor()),
        delay_timer_(socket_.get_executor()),
        handler_(handler) {}

  void Start() {
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      self->ArmIdleTimer();
      self->ReadRequest();
    });
  }

 private:
  // Parses the next request from bytes already here (pipelining) or from the socket.
  void ReadRequest() {
    parser_.emplace(request_);
    parser_->body_limit(kBodyLimit);
    parser_->eager(true);
    if (buffer_.size() > 0) {
      Parse();
    } else {
      ReadSome();
    }
  }

  void ReadSome() {
    socket_.async_read_some(buffer_.prepare(beast::read_size(buffer_, kReadLimit)),
                            [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                              self->OnReadSome(ec, bytes);
                            });
  }

  void OnReadSome(beast::error_code ec, size_t bytes) {
    if (ec == asio::error::eof && !parser_->got_some()) {
      beast::error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_send, ignored);
      return;
    }
    if (ec) {
      return;
    }
    active_ = true;
    buffer_.commit(bytes);
    Parse();
  }

  void Parse() {
    while (!parser_->is_done()) {
      if (buffer_.size() == 0) {
        ReadSome();
        return;
      }
      beast::error_code ec;
      size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more || (!ec && used == 0)) {
        ReadSome();
        return;
      }
      if (ec) {
        return;  // malformed or too large: drop the connection
      }
    }
    Respond();
  }

  void Respond() {
    const unsigned version = parser_->version();
    const bool keep_alive = parser_->keep_alive();
    response_ = handler_(request_);
    if (response_.reset_connection && response_.delay_ms <= 0) {
      Reset();
      return;
    }
    out_.clear();
    keep_alive_ = AppendHttpResponse(response_, version, keep_alive, out_);
    if (response_.delay_ms > 0) {
      delay_timer_.expires_after(std::chrono::milliseconds(response_.delay_ms));
      delay_timer_.async_wait(
          [self = shared_from_this()](beast::error_code ec) { self->OnDelay(ec); });
      return;
    }
    Write();
  }

  void OnDelay(beast::error_code ec) {
    if (ec) {
      return;
    }
    if (response_.reset_connection) {
      Reset();
      return;
    }
    Write();
  }

  void Write() {
    asio::async_write(
        socket_, asio::buffer(out_),
        [self = shared_from_this()](beast::error_code ec, size_t /*bytes*/) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    if (ec) {
      return;
    }
    if (!keep_alive_) {
      beast::error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_send, ignored);
      return;
    }
    ReadRequest();
  }

  // Every kIdleTimeout: closes the connection when no request arrived since the last tick (the
  // pending read or write then fails and the session ends). One timer wait per period instead
  // of one per read and write.
  void ArmIdleTimer() {
    idle_timer_.expires_after(kIdleTimeout);
    idle_timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      std::shared_ptr<Session> self = weak.lock();
      if (ec || !self) {
        return;
      }
      if (!self->active_) {
        beast::error_code ignored;
        self->socket_.close(ignored);
        self->delay_timer_.cancel();
        return;
      }
      self->active_ = false;
      self->ArmIdleTimer();
    });
  }

  // Closes with SO_LINGER 0, so the peer sees a connection reset.
  void Reset() {
    beast::error_code ignored;
    socket_.set_option(asio::socket_base::linger(true, 0), ignored);
    socket_.close(ignored);
    idle_timer_.cancel();
  }

  Socket socket_;
  Timer idle_timer_;
  Timer delay_timer_;
  beast::flat_buffer buffer_;
  SimRequest request_;
  std::optional<SimRequestParser> parser_;
  SimResponse response_;
  std::string out_;
  bool keep_alive_ = true;
  bool active_ = false;  // a request arrived since the last idle tick
  const RequestHandler& handler_;
};

// Accepts connections and starts a Session on a fresh strand for each.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& ioc, tcp::acceptor&& acceptor, const RequestHandler& handler)
      : ioc_(ioc), acceptor_(std::move(acceptor)), handler_(handler) {}

  void DoAccept() {
    acceptor_.async_accept(asio::make_strand(ioc_),
                           [self = shared_from_this()](beast::error_code ec, Socket socket) {
                             self->OnAccept(ec, std::move(socket));
                           });
  }

 private:
  void OnAccept(beast::error_code ec, Socket socket) {
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
